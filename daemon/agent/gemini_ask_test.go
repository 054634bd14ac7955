package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/rules"
)

// Gemini CLI waits forever for a person when a BeforeTool hook answers
// ask, and the hook cannot tell a run with a person from one without
// (e2e TestGeminiAskNeverRuns/interactive hung `gemini -p`), so no
// outcome but allow may reach Gemini as anything but a deny.
func TestGeminiNeverAsks(t *testing.T) {
	call := rules.Call{Agent: Gemini, Event: "BeforeTool", Phase: rules.PreTool, Tool: "run_shell_command"}
	for _, tt := range []struct {
		outcome  rules.Outcome
		decision string
		reason   string // a part of the reason
	}{
		{rules.Allow, "allow", ""},
		{rules.Ask, "deny", "needs approval: because (rule r) — to allow it"},
		{rules.Sandbox, "deny", "allowed only inside narrowd's sandbox"},
		{rules.Deny, "deny", "denied: because (rule r)"},
	} {
		for _, interactive := range []bool{false, true} {
			r := Encode(Gemini, call, rules.Decision{Outcome: tt.outcome, Rule: "r", Reason: "because"}, Options{Interactive: interactive})
			var out geminiOutput
			if err := json.Unmarshal(r.Stdout, &out); err != nil {
				t.Fatalf("%s interactive=%v: stdout %q: %v", tt.outcome, interactive, r.Stdout, err)
			}
			if out.Decision != tt.decision || !strings.Contains(out.Reason, tt.reason) || r.ExitCode != 0 {
				t.Errorf("%s interactive=%v: got %+v exit %d, want decision %q with reason containing %q",
					tt.outcome, interactive, out, r.ExitCode, tt.decision, tt.reason)
			}
		}
	}
}
