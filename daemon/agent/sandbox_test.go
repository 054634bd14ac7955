package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/rules"
)

const testRewrite = "'/usr/local/bin/narrowd' exec --socket '/run/user/1000/narrowd/narrowd.sock' --ticket 0123456789abcdef0123456789abcdef"

// rewriteIn returns the command a reply rewrites the call to, or "" when
// the reply is not a rewrite. Only the shapes proven on the real clients
// count (real-clients.md §1–4).
func rewriteIn(agent string, call rules.Call, r Reply) string {
	m, ok := object(r.Stdout)
	if !ok || r.ExitCode != 0 || call.Phase != rules.PreTool {
		return ""
	}
	switch agent {
	case Claude, Codex:
		hs := sub(m, "hookSpecificOutput")
		if strOf(hs, "permissionDecision") == "allow" && strOf(hs, "hookEventName") == "PreToolUse" {
			return strOf(sub(hs, "updatedInput"), "command")
		}
	case Gemini:
		if strOf(m, "decision") == "allow" {
			return strOf(sub(sub(m, "hookSpecificOutput"), "tool_input"), "command")
		}
	case Copilot:
		if strOf(m, "permissionDecision") == "allow" {
			return strOf(sub(m, "modifiedArgs"), "command")
		}
	}
	return ""
}

// TestEncodeSandbox: a sandbox outcome with a ticket is either a proven
// rewrite to exactly the ticket command, or a reply that blocks and names
// that command. It never lets the original command run.
func TestEncodeSandbox(t *testing.T) {
	t.Parallel()
	wantRewrite := map[string]bool{Claude: true, Codex: true, Gemini: true, Copilot: true}
	for _, call := range decisionCalls(t) {
		for _, interactive := range []bool{false, true} {
			name := fmt.Sprintf("%s/%s/%s/interactive=%v", call.Agent, call.Event, call.Tool, interactive)
			t.Run(name, func(t *testing.T) {
				d := rules.Decision{Outcome: rules.Sandbox, Rule: "run-repo-code", Reason: "a build runner"}
				r := Encode(call.Agent, call, d, Options{Interactive: interactive, Rewrite: testRewrite})
				got := rewriteIn(call.Agent, call, r)
				pascalCopilot := call.Agent == Copilot && call.Event == "PreToolUse"
				switch {
				case got != "":
					if got != testRewrite {
						t.Errorf("rewritten to %q, want the ticket command", got)
					}
					if call.Phase != rules.PreTool || !wantRewrite[call.Agent] || pascalCopilot {
						t.Errorf("rewrite where it is not proven: %s", r.Stdout)
					}
					if call.Agent == Codex {
						// Codex's schema: exactly these keys, or the tool runs.
						var m map[string]map[string]any
						json.Unmarshal(r.Stdout, &m)
						for k := range m["hookSpecificOutput"] {
							if k != "hookEventName" && k != "permissionDecision" && k != "updatedInput" {
								t.Errorf("Codex rewrite has key %q", k)
							}
						}
					}
				default:
					if call.Phase == rules.PreTool && wantRewrite[call.Agent] && !pascalCopilot {
						t.Errorf("no rewrite where one is proven: %s", r.Stdout)
					}
					for _, e := range wouldRun(call.Agent, call, r, interactive) {
						if e != blocked {
							t.Errorf("deny-and-instruct does not block: %v\n%s", e, show(r))
						}
					}
					if !strings.Contains(string(r.Stdout)+r.Stderr, testRewrite) {
						t.Errorf("the block does not name the command to run: %s", show(r))
					}
				}
			})
		}
	}
}

// TestEncodeSandboxKeepsInput: the rewrite keeps the other input fields
// (Claude replaces the whole object) and does not change the call's own.
func TestEncodeSandboxKeepsInput(t *testing.T) {
	in := map[string]any{"command": "go test ./...", "description": "run tests", "timeout": 60000.0}
	call := rules.Call{Agent: Claude, Event: "PreToolUse", Phase: rules.PreTool, Tool: "Bash", Input: in}
	r := Encode(Claude, call, rules.Decision{Outcome: rules.Sandbox, Rule: "r"}, Options{Rewrite: testRewrite})
	var out struct {
		Specific struct {
			UpdatedInput map[string]any `json:"updatedInput"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(r.Stdout, &out); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"command": testRewrite, "description": "run tests", "timeout": 60000.0}
	if fmt.Sprint(out.Specific.UpdatedInput) != fmt.Sprint(want) {
		t.Errorf("updatedInput = %v, want %v", out.Specific.UpdatedInput, want)
	}
	if in["command"] != "go test ./..." {
		t.Errorf("the call's own input was changed: %v", in)
	}
}
