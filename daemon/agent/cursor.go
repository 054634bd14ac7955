package agent

import (
	"fmt"
	"path/filepath"

	"github.com/narrowd/narrowd/rules"
)

// Cursor (hooks.md §3, from cursor.com/docs/hooks; no real client run).
//
// Payload: common conversation_id, generation_id, model, hook_event_name,
// cursor_version, workspace_roots, user_email, transcript_path; per event:
//   - preToolUse: tool_name, tool_input (object), tool_use_id, cwd.
//   - beforeShellExecution: command, cwd, sandbox → tool "Shell" with
//     input {"command"}, the name preToolUse uses for shell calls.
//   - beforeMCPExecution: tool_name, tool_input as a JSON string, url or
//     command of the server → tool "MCP:<name>" (Cursor's matcher form), so
//     an MCP tool can never pass for a built-in such as "Read".
//   - beforeReadFile: file_path, content, attachments → tool "Read" with
//     input {"file_path"}; the content is not carried.
//
// Replies: {"permission":"allow"|"deny"|"ask","user_message","agent_message"}.
// ask is enforced only by beforeShellExecution and beforeMCPExecution; for
// preToolUse it is "accepted but not enforced" (it would run) and
// beforeReadFile has none, so there ask is a deny. Exit 2 also means deny
// and other failures fail open, so every block is the deny JSON and exit 2
// together: the block holds whichever of the two Cursor reads.

func cursorPhase(event string) (rules.Phase, bool) {
	switch event {
	case "preToolUse", "beforeShellExecution", "beforeMCPExecution", "beforeReadFile":
		return rules.PreTool, true
	case "postToolUse", "postToolUseFailure", "afterShellExecution", "afterMCPExecution", "afterFileEdit":
		return rules.PostTool, true
	}
	return "", false
}

func decodeCursor(f fields, _ string) (rules.Call, error) {
	event, err := f.required("hook_event_name")
	if err != nil {
		return rules.Call{}, err
	}
	phase, ok := cursorPhase(event)
	if !ok {
		return rules.Call{}, fmt.Errorf("%w %q", ErrUnsupportedEvent, event)
	}
	c := rules.Call{Event: event, Phase: phase}
	if c.Session, err = f.str("conversation_id"); err != nil {
		return rules.Call{}, err
	}
	if c.Cwd, err = dir(f, "cwd"); err != nil {
		return rules.Call{}, err
	}
	if c.Workspaces, err = cursorRoots(f); err != nil {
		return rules.Call{}, err
	}
	if c.ID, err = f.str("tool_use_id"); err != nil {
		return rules.Call{}, err
	}
	switch event {
	case "beforeShellExecution", "afterShellExecution":
		cmd, err := f.required("command")
		if err != nil {
			return rules.Call{}, err
		}
		c.Tool, c.Input = "Shell", map[string]any{"command": cmd}
	case "beforeReadFile":
		p, err := f.required("file_path")
		if err != nil {
			return rules.Call{}, err
		}
		c.Tool, c.Input = "Read", map[string]any{"file_path": p}
	case "afterFileEdit":
		p, err := f.required("file_path")
		if err != nil {
			return rules.Call{}, err
		}
		c.Tool, c.Input = "Write", map[string]any{"file_path": p}
		if e, ok := f.first("edits"); ok {
			c.Input["edits"] = e
		}
	case "beforeMCPExecution", "afterMCPExecution":
		name, err := toolName(f, "tool_name")
		if err != nil {
			return rules.Call{}, err
		}
		c.Tool = "MCP:" + name
		if c.Input, err = input("tool_input", f["tool_input"]); err != nil {
			return rules.Call{}, err
		}
	default:
		if c.Tool, err = toolName(f, "tool_name"); err != nil {
			return rules.Call{}, err
		}
		if c.Input, err = input("tool_input", f["tool_input"]); err != nil {
			return rules.Call{}, err
		}
	}
	if phase == rules.PostTool {
		if v, ok := f.first("tool_output", "tool_response", "output", "result_json"); ok {
			c.Response = v
		} else if v, ok := f.first("error"); ok {
			c.Response = map[string]any{"error": v}
		}
	}
	return c, nil
}

func cursorRoots(f fields) ([]string, error) {
	v, ok := f.first("workspace_roots")
	if !ok {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: \"workspace_roots\" is %s, want an array", ErrMalformed, kind(v))
	}
	var roots []string
	for _, e := range list {
		s, ok := e.(string)
		if !ok || !filepath.IsAbs(s) {
			return nil, fmt.Errorf("%w: \"workspace_roots\" holds %s, want absolute paths", ErrMalformed, kind(e))
		}
		roots = append(roots, workspace(s)...)
	}
	return roots, nil
}

type cursorOutput struct {
	Permission   string `json:"permission"`
	UserMessage  string `json:"user_message,omitempty"`
	AgentMessage string `json:"agent_message,omitempty"`
}

func cursorCanAsk(event string) bool {
	return event == "beforeShellExecution" || event == "beforeMCPExecution"
}

func encodeCursor(call rules.Call, d rules.Decision, opt Options) Reply {
	switch {
	case d.Outcome == rules.Allow:
		return Reply{Stdout: mustJSON(cursorOutput{Permission: "allow"})}
	case d.Outcome == rules.Ask && opt.Interactive && cursorCanAsk(call.Event):
		r := askReason(d)
		return Reply{Stdout: mustJSON(cursorOutput{Permission: "ask", UserMessage: r, AgentMessage: r})}
	}
	return failCursor(call, denyReason(d))
}

func failCursor(_ rules.Call, reason string) Reply {
	out := mustJSON(cursorOutput{Permission: "deny", UserMessage: reason, AgentMessage: reason})
	return Reply{Stdout: out, Stderr: reason + "\n", ExitCode: 2}
}
