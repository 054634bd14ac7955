package agent

import (
	"fmt"

	"github.com/narrowd/narrowd/rules"
)

// Gemini CLI (real-clients.md §2, hooks.md §2).
//
// Payload: snake_case session_id, transcript_path, cwd, hook_event_name
// (BeforeTool, AfterTool, …), timestamp, tool_name, tool_input,
// tool_response after the call; no tool-call id, no permission mode, no
// permission-request event. mcp_context is not carried into the Call.
//
// Replies (proven against 0.61.0):
//   - top-level {"decision":"deny","reason":R} blocks. Claude's
//     hookSpecificOutput is ignored and the tool runs, so narrowd never
//     sends it.
//   - {"decision":"ask"} hangs a headless run forever, and the hook cannot
//     tell a headless run from one with a person: the payload says
//     neither, and one daemon serves both (e2e TestGeminiAskNeverRuns
//     hung a `gemini -p` run with the daemon set to interactive). Gemini
//     cannot ask, so ask is always a deny with approval instructions.
//   - Gemini reads stdout, else stderr, as JSON whatever the exit code;
//     plain text with exit 2 blocks. Fail keeps stdout empty and starts
//     stderr with "narrowd:" so it never parses as JSON.

func isGeminiEvent(event string) bool {
	switch event {
	case "BeforeTool", "AfterTool", "BeforeAgent", "AfterAgent", "BeforeModel",
		"AfterModel", "BeforeToolSelection", "PreCompress":
		return true
	}
	return false
}

func decodeGemini(f fields, _ string) (rules.Call, error) {
	event, err := f.required("hook_event_name")
	if err != nil {
		return rules.Call{}, err
	}
	var phase rules.Phase
	switch event {
	case "BeforeTool":
		phase = rules.PreTool
	case "AfterTool":
		phase = rules.PostTool
	default:
		return rules.Call{}, fmt.Errorf("%w %q", ErrUnsupportedEvent, event)
	}
	return decodeSnake(f, func(string) (rules.Phase, bool) { return phase, true },
		snakeKeys{session: "session_id", tool: "tool_name", input: "tool_input", response: "tool_response"})
}

type geminiOutput struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

func encodeGemini(_ rules.Call, d rules.Decision, _ Options) Reply {
	if d.Outcome == rules.Allow {
		return Reply{Stdout: mustJSON(geminiOutput{Decision: "allow"})}
	}
	return Reply{Stdout: mustJSON(geminiOutput{Decision: "deny", Reason: denyReason(d)})}
}
