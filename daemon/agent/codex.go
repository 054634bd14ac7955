package agent

import (
	"github.com/narrowd/narrowd/rules"
)

// OpenAI Codex CLI (real-clients.md §4, hooks.md §5).
//
// Payload: Claude's shape plus turn_id and model; exec_command arrives as
// tool Bash with tool_input.command, apply_patch with the patch envelope in
// tool_input.command.
//
// Replies (proven against 0.169.0 unless noted):
//   - PreToolUse deny: narrowd answers exit 2 with the reason on stderr.
//     The JSON deny (hookSpecificOutput.permissionDecision deny with a
//     non-empty reason) blocks too, but Codex checks its output against a
//     schema with additionalProperties:false, and any answer that fails it
//     counts as a failed hook and the tool runs. Exit 2 with non-empty
//     stderr does not depend on that schema; every narrowd reason is
//     non-empty by construction.
//   - allow alone is "unsupported" → failed hook → runs; narrowd abstains
//     instead (empty stdout, exit 0), which is the same for an allow.
//   - ask is "unsupported" → the tool RUNS. Codex cannot ask, so ask is
//     always a deny with approval instructions, interactive or not.
//   - PermissionRequest (schema, hooks.md §5.4): hookSpecificOutput.decision
//     {behavior, message}. What exit 2 means there is not documented, so
//     narrowd answers with JSON.

func codexPhase(event string) (rules.Phase, bool) {
	switch event {
	case "PreToolUse":
		return rules.PreTool, true
	case "PermissionRequest":
		return rules.PermissionAsk, true
	case "PostToolUse":
		return rules.PostTool, true
	}
	return "", false
}

func decodeCodex(f fields, _ string) (rules.Call, error) {
	return decodeSnake(f, codexPhase, claudeKeys)
}

func encodeCodex(call rules.Call, d rules.Decision, _ Options) Reply {
	if call.Phase == rules.PermissionAsk {
		if d.Outcome == rules.Allow {
			return Reply{Stdout: codexPermission("allow", "")}
		}
		return Reply{Stdout: codexPermission("deny", denyReason(d))}
	}
	if d.Outcome == rules.Allow {
		return Abstain(Codex, call)
	}
	return Reply{Stderr: denyReason(d) + "\n", ExitCode: 2}
}

func failCodex(call rules.Call, reason string) Reply {
	if call.Phase == rules.PermissionAsk {
		return Reply{Stdout: codexPermission("deny", reason)}
	}
	return Reply{Stderr: reason + "\n", ExitCode: 2}
}

func codexPermission(behavior, message string) []byte {
	// Codex's PermissionRequest output is Claude's shape.
	return claudePermission(behavior, message)
}
