package agent

import (
	"fmt"
	"strings"

	"github.com/narrowd/narrowd/rules"
)

// GitHub Copilot CLI (real-clients.md §3, hooks.md §4, github/docs
// cli-hooks-reference.md).
//
// Two payload dialects, chosen by how the hook event is configured:
//   - camelCase (preToolUse, …): sessionId, timestamp (ms), cwd, toolName,
//     toolArgs (an object in 1.0.102, a JSON string in the docs: both are
//     read), toolResult after the call, error after a failure. There is NO
//     event name, so the event is inferred: toolResult → postToolUse,
//     error → postToolUseFailure, else preToolUse, unless the caller
//     passes the configured event to DecodeEvent. A camelCase
//     permissionRequest payload cannot be told from a preToolUse one, so
//     the hook command for it must say which event it is.
//   - PascalCase (PreToolUse, …), "VS Code compatible": hook_event_name,
//     session_id, ISO timestamp, cwd, tool_name, tool_input, tool_result.
//
// Replies:
//   - camelCase preToolUse: top-level permissionDecision allow|deny with
//     permissionDecisionReason, exit 0 (proven, 1.0.102). Claude's
//     hookSpecificOutput is ignored there and the tool runs.
//   - ask is never sent: headless Copilot turns it into a deny, but a
//     third-party report (voodootikigod/adlc#240) saw --allow-all-tools
//     auto-approve a hook's ask, so ask could run a call nobody approved.
//     narrowd denies with approval instructions instead.
//   - permissionRequest: {"behavior":"allow"|"deny","message":R}; exit 2 is
//     a deny and the stdout JSON is merged into it, so blocks use both.
//   - PascalCase: which output fields Copilot reads is not documented, so
//     narrowd writes Copilot's top-level fields and Claude's
//     hookSpecificOutput together, and blocks with exit 2 as well: any
//     non-zero exit of a command preToolUse hook denies (proven).

func copilotPascalPhase(event string) (rules.Phase, bool) {
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

func copilotCamelPhase(event string) (rules.Phase, bool) {
	switch event {
	case "preToolUse":
		return rules.PreTool, true
	case "permissionRequest":
		return rules.PermissionAsk, true
	case "postToolUse", "postToolUseFailure":
		return rules.PostTool, true
	}
	return "", false
}

func decodeCopilot(f fields, configured string) (rules.Call, error) {
	if _, ok := f["hook_event_name"]; ok {
		if _, camel := f.first("toolName", "toolArgs"); !camel {
			return decodeSnake(f, copilotPascalPhase, snakeKeys{
				session: "session_id", tool: "tool_name", input: "tool_input", response: "tool_result",
			})
		}
	}
	event, err := f.str("hookEventName")
	if err != nil {
		return rules.Call{}, err
	}
	if event == "" {
		event, err = f.str("hook_event_name")
		if err != nil {
			return rules.Call{}, err
		}
	}
	if event == "" && configured != "" {
		// The camelCase spelling of the configured event, which may have
		// been configured as a PascalCase one (PermissionRequest).
		event = strings.ToLower(configured[:1]) + configured[1:]
	}
	if event == "" {
		// Copilot 1.0.102 names the event of a permissionRequest payload
		// in hookName (seen in the e2e suite); the configured event wins.
		if event, err = f.str("hookName"); err != nil {
			return rules.Call{}, err
		}
	}
	if event == "" {
		switch {
		case f["toolResult"] != nil:
			event = "postToolUse"
		case f["error"] != nil:
			event = "postToolUseFailure"
		default:
			event = "preToolUse"
		}
	}
	phase, ok := copilotCamelPhase(event)
	if !ok {
		return rules.Call{}, fmt.Errorf("%w %q", ErrUnsupportedEvent, event)
	}
	c := rules.Call{Event: event, Phase: phase}
	if c.Session, err = f.str("sessionId"); err != nil {
		return rules.Call{}, err
	}
	if c.Cwd, err = dir(f, "cwd"); err != nil {
		return rules.Call{}, err
	}
	c.Workspaces = workspace(c.Cwd)
	if c.Tool, err = toolName(f, "toolName"); err != nil {
		return rules.Call{}, err
	}
	argsKey := "toolArgs"
	if _, ok := f["toolArgs"]; !ok {
		if _, ok := f["toolInput"]; ok {
			argsKey = "toolInput"
		}
	}
	if c.Input, err = input(argsKey, f[argsKey]); err != nil {
		return rules.Call{}, err
	}
	if phase == rules.PermissionAsk {
		if err := copilotPermissionPath(c.Input); err != nil {
			return rules.Call{}, err
		}
	}
	if phase == rules.PostTool {
		c.Response = postResponse(f, "toolResult")
	}
	return c, nil
}

// copilotPermissionPath reads the file a camelCase permissionRequest is
// about. Copilot 1.0.102 asks about its create and edit tools as toolName
// "edit" with toolInput {file_path, diff} (seen in the e2e suite), where
// the pre-tool payload had {path, …}; the catalog judges "path". A payload
// that names two different files is refused rather than judged on one.
func copilotPermissionPath(in map[string]any) error {
	fp, ok := in["file_path"]
	if !ok {
		return nil
	}
	if p, ok := in["path"]; ok && p != fp {
		return fmt.Errorf("%w: permission request names two files (path and file_path)", ErrMalformed)
	}
	in["path"] = fp
	return nil
}

// copilotOutput is Copilot's hook reply, with Claude's hookSpecificOutput
// beside it for PascalCase events.
type copilotOutput struct {
	PermissionDecision       string          `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string          `json:"permissionDecisionReason,omitempty"`
	Behavior                 string          `json:"behavior,omitempty"`
	Message                  string          `json:"message,omitempty"`
	Specific                 *claudeSpecific `json:"hookSpecificOutput,omitempty"`
}

func encodeCopilot(call rules.Call, d rules.Decision, _ Options) Reply {
	if d.Outcome == rules.Allow {
		return copilotReply(call, "allow", allowReason(d))
	}
	return copilotReply(call, "deny", denyReason(d))
}

func copilotReply(call rules.Call, decision, reason string) Reply {
	pascal := call.Event == "PreToolUse" || call.Event == "PermissionRequest"
	var out copilotOutput
	if call.Phase == rules.PermissionAsk {
		out.Behavior = decision
		if decision != "allow" {
			out.Message = reason
		}
		if pascal {
			out.Specific = &claudeSpecific{HookEventName: "PermissionRequest",
				Decision: &behaviorOutput{Behavior: out.Behavior, Message: out.Message}}
		}
	} else {
		out.PermissionDecision, out.PermissionDecisionReason = decision, reason
		if pascal {
			out.Specific = &claudeSpecific{HookEventName: "PreToolUse",
				PermissionDecision: decision, PermissionDecisionReason: reason}
		}
	}
	r := Reply{Stdout: mustJSON(out)}
	if decision != "allow" && (pascal || call.Phase == rules.PermissionAsk) {
		r.Stderr, r.ExitCode = reason+"\n", 2
	}
	return r
}
