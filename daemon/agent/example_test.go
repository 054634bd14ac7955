package agent_test

import (
	"fmt"
	"strings"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/rules"
)

// Codex cannot ask a person from a PreToolUse hook (an "ask" answer makes
// the call run), so even in an interactive session ask becomes a blocking
// deny that says how to approve.
func ExampleEncode() {
	payload := `{"session_id":"s1","turn_id":"t1","cwd":"/home/me/proj","hook_event_name":"PreToolUse",` +
		`"model":"gpt-5.5","permission_mode":"default","tool_name":"Bash",` +
		`"tool_input":{"command":"git push --force"},"tool_use_id":"call_1"}`
	call, err := agent.Decode(agent.Codex, strings.NewReader(payload))
	if err != nil {
		fmt.Println(err)
		return
	}
	d := rules.Decision{Outcome: rules.Ask, Rule: "force-push", Reason: "git push --force rewrites the remote's history"}
	r := agent.Encode(agent.Codex, call, d, agent.Options{Interactive: true})
	fmt.Printf("exit %d, stdout %q\n%s", r.ExitCode, r.Stdout, r.Stderr)
	// Output:
	// exit 2, stdout ""
	// narrowd: needs approval: git push --force rewrites the remote's history (rule force-push) — to allow it, run the command yourself or add a rule to your narrowd profile
}

// A payload that is not what the agent sends never becomes a Call.
func ExampleDecode() {
	_, err := agent.Decode(agent.Claude, strings.NewReader(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls","command":"rm -rf ~"}}`))
	fmt.Println(err)
	// Output:
	// claude: malformed hook payload: duplicate key "command"
}
