package agent

import (
	"maps"

	"github.com/narrowd/narrowd/rules"
)

// The sandbox outcome, carried out (issue 4): the call runs as
// `narrowd exec --ticket T` instead. Only rewrites proven on the real
// clients are used (real-clients.md §1–4):
//   - Claude and Codex PreToolUse: permissionDecision allow with
//     updatedInput, which replaces the whole input object;
//   - Gemini BeforeTool: decision allow with hookSpecificOutput.tool_input,
//     which is merged over the original input;
//   - Copilot camelCase preToolUse: permissionDecision allow with
//     modifiedArgs.
//
// Everywhere else (Cursor, Copilot's PascalCase events, any permission
// request) the answer is a deny whose reason gives the exact command to
// run: deny-and-instruct. The command text never appears in the rewrite,
// so an agent that ignores it runs nothing it was not allowed to; the
// daemon notices the ticket was never redeemed and stops rewriting for
// that session.

// shellField is the input field that holds the command in every agent's
// shell tool.
const shellField = "command"

func encodeSandbox(agent string, call rules.Call, d rules.Decision, rewrite string) Reply {
	if call.Phase == rules.PreTool {
		switch agent {
		case Claude:
			return Reply{Stdout: mustJSON(claudeRewrite{Specific: claudeRewriteSpecific{
				HookEventName: "PreToolUse", PermissionDecision: "allow",
				PermissionDecisionReason: sandboxAllowReason(d), UpdatedInput: rewritten(call, rewrite),
			}})}
		case Codex:
			// Codex's schema has additionalProperties:false: exactly the
			// proven fields, no reason.
			return Reply{Stdout: mustJSON(claudeRewrite{Specific: claudeRewriteSpecific{
				HookEventName: "PreToolUse", PermissionDecision: "allow", UpdatedInput: rewritten(call, rewrite),
			}})}
		case Gemini:
			// Exactly the proven shape: no reason beside the allow.
			return Reply{Stdout: mustJSON(geminiRewrite{Decision: "allow",
				Specific: geminiRewriteSpecific{ToolInput: map[string]any{shellField: rewrite}}})}
		case Copilot:
			if call.Event != "PreToolUse" { // camelCase preToolUse names no event
				return Reply{Stdout: mustJSON(copilotRewrite{PermissionDecision: "allow",
					PermissionDecisionReason: sandboxAllowReason(d), ModifiedArgs: rewritten(call, rewrite)})}
			}
		}
	}
	instruct := d
	instruct.Outcome = rules.Deny
	instruct.Reason = "run exactly this instead, which runs the same command in narrowd's sandbox (no network, writes only in the workspace): " +
		rewrite + " — " + d.Reason
	return Encode(agent, call, instruct, Options{})
}

// rewritten is the call's input with the command replaced.
func rewritten(call rules.Call, rewrite string) map[string]any {
	in := maps.Clone(call.Input)
	if in == nil {
		in = map[string]any{}
	}
	in[shellField] = rewrite
	return in
}

func sandboxAllowReason(d rules.Decision) string {
	return "narrowd: runs in narrowd's sandbox: " + because(d)
}

type claudeRewrite struct {
	Specific claudeRewriteSpecific `json:"hookSpecificOutput"`
}

type claudeRewriteSpecific struct {
	HookEventName            string         `json:"hookEventName"`
	PermissionDecision       string         `json:"permissionDecision"`
	PermissionDecisionReason string         `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             map[string]any `json:"updatedInput"`
}

type geminiRewrite struct {
	Decision string                `json:"decision"`
	Specific geminiRewriteSpecific `json:"hookSpecificOutput"`
}

type geminiRewriteSpecific struct {
	ToolInput map[string]any `json:"tool_input"`
}

type copilotRewrite struct {
	PermissionDecision       string         `json:"permissionDecision"`
	PermissionDecisionReason string         `json:"permissionDecisionReason,omitempty"`
	ModifiedArgs             map[string]any `json:"modifiedArgs"`
}
