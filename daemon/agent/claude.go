package agent

import (
	"fmt"

	"github.com/narrowd/narrowd/rules"
)

// Claude Code (real-clients.md §1, hooks.md §1).
//
// Payload: snake_case session_id, transcript_path, cwd, hook_event_name,
// prompt_id, permission_mode, tool_name, tool_input, tool_use_id, and
// tool_response after the call. The project dir (CLAUDE_PROJECT_DIR) is
// only in the hook's environment, so the workspace comes from cwd.
//
// Replies, all proven against 2.1.328:
//   - PreToolUse: exit 0 with hookSpecificOutput.permissionDecision
//     allow|deny|ask; hookEventName must equal the firing event. A
//     top-level "decision":"deny"|"allow" voids the whole answer (fail
//     open), so narrowd never writes one; only the legacy "block" is valid.
//   - ask makes an interactive Claude prompt and a headless one deny; narrowd
//     still sends ask only when a person can answer, so the deny carries
//     narrowd's own approval instructions.
//   - PermissionRequest ignores exit 2; only decision.behavior deny blocks.
//     An ask there is an abstain: Claude is about to show its own dialog.
//   - The http hook ignores status codes: blocks must be in the 2xx body,
//     so Fail writes JSON as well as exit 2.

// snakeKeys names the fields of a Claude-compatible snake_case payload;
// Codex, Gemini and Copilot's PascalCase events use variants of it.
type snakeKeys struct {
	session, tool, input, id, mode, response string
}

// claudeKeys is Claude's (and Codex's) field table.
var claudeKeys = snakeKeys{
	session: "session_id", tool: "tool_name", input: "tool_input",
	id: "tool_use_id", mode: "permission_mode", response: "tool_response",
}

func claudePhase(event string) (rules.Phase, bool) {
	switch event {
	case "PreToolUse":
		return rules.PreTool, true
	case "PermissionRequest":
		return rules.PermissionAsk, true
	case "PostToolUse", "PostToolUseFailure":
		return rules.PostTool, true
	}
	return "", false
}

func decodeClaude(f fields, _ string) (rules.Call, error) {
	return decodeSnake(f, claudePhase, claudeKeys)
}

// decodeSnake decodes the Claude-compatible payload shape.
func decodeSnake(f fields, phaseOf func(string) (rules.Phase, bool), k snakeKeys) (rules.Call, error) {
	event, err := f.required("hook_event_name")
	if err != nil {
		return rules.Call{}, err
	}
	phase, ok := phaseOf(event)
	if !ok {
		return rules.Call{}, fmt.Errorf("%w %q", ErrUnsupportedEvent, event)
	}
	var c rules.Call
	c.Event, c.Phase = event, phase
	if c.Session, err = f.str(k.session); err != nil {
		return rules.Call{}, err
	}
	if c.Cwd, err = dir(f, "cwd"); err != nil {
		return rules.Call{}, err
	}
	c.Workspaces = workspace(c.Cwd)
	if c.Tool, err = toolName(f, k.tool); err != nil {
		return rules.Call{}, err
	}
	if c.Input, err = input(k.input, f[k.input]); err != nil {
		return rules.Call{}, err
	}
	if k.id != "" {
		if c.ID, err = f.str(k.id); err != nil {
			return rules.Call{}, err
		}
	}
	if k.mode != "" {
		if c.Mode, err = f.str(k.mode); err != nil {
			return rules.Call{}, err
		}
	}
	if phase == rules.PostTool {
		c.Response = postResponse(f, k.response)
	}
	return c, nil
}

// postResponse is the tool's result on a post-tool event, or for a failed
// call its error, wrapped so the two stay apart.
func postResponse(f fields, key string) any {
	if v, ok := f.first(key); ok {
		return v
	}
	if v, ok := f.first("error"); ok {
		return map[string]any{"error": v}
	}
	return nil
}

// claudeOutput is Claude's hook reply. Fields mirror Claude's names.
type claudeOutput struct {
	Decision string          `json:"decision,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Specific *claudeSpecific `json:"hookSpecificOutput,omitempty"`
}

type claudeSpecific struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string          `json:"permissionDecisionReason,omitempty"`
	Decision                 *behaviorOutput `json:"decision,omitempty"`
}

// behaviorOutput is a permission-request decision (Claude, Codex, Copilot).
type behaviorOutput struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message,omitempty"`
}

func encodeClaude(call rules.Call, d rules.Decision, opt Options) Reply {
	if call.Phase == rules.PermissionAsk {
		switch {
		case d.Outcome == rules.Allow:
			return Reply{Stdout: claudePermission("allow", "")}
		case d.Outcome == rules.Ask && opt.Interactive:
			return Abstain(Claude, call) // Claude shows its own dialog
		}
		return Reply{Stdout: claudePermission("deny", denyReason(d))}
	}
	switch {
	case d.Outcome == rules.Allow:
		return Reply{Stdout: claudePreTool("allow", allowReason(d))}
	case d.Outcome == rules.Ask && opt.Interactive:
		return Reply{Stdout: claudePreTool("ask", askReason(d))}
	}
	return Reply{Stdout: claudePreTool("deny", denyReason(d))}
}

func failClaude(call rules.Call, reason string) Reply {
	switch call.Phase {
	case rules.PermissionAsk:
		// Exit 2 is ignored here and would void the JSON.
		return Reply{Stdout: claudePermission("deny", reason)}
	case rules.PreTool:
		// Exit 2 blocks the command hook; the JSON blocks the http hook.
		return Reply{Stdout: claudePreTool("deny", reason), Stderr: reason + "\n", ExitCode: 2}
	}
	// Event unknown: hookSpecificOutput would need its name, so use the
	// legacy block, valid for every Claude event.
	return Reply{Stdout: mustJSON(claudeOutput{Decision: "block", Reason: reason}), Stderr: reason + "\n", ExitCode: 2}
}

func claudePreTool(decision, reason string) []byte {
	return mustJSON(claudeOutput{Specific: &claudeSpecific{
		HookEventName:            "PreToolUse",
		PermissionDecision:       decision,
		PermissionDecisionReason: reason,
	}})
}

func claudePermission(behavior, message string) []byte {
	return mustJSON(claudeOutput{Specific: &claudeSpecific{
		HookEventName: "PermissionRequest",
		Decision:      &behaviorOutput{Behavior: behavior, Message: message},
	}})
}
