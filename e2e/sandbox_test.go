package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// shellCall is a scripted shell call in a client's own tool name.
func shellCall(n toolNames, cmd string) ToolCall {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return ToolCall{Name: n.shell, Input: string(b)}
}

// sandboxedBuild runs `make` once through a client and checks that it ran
// in narrowd's sandbox: the daemon rewrote the call to narrowd-exec
// --ticket (built beside narrowd), the client ran the rewrite, the
// daemon's check found narrowd-exec holding the sandbox, and the build
// wrote inside the workspace and could not write outside or reach the
// network.
func sandboxedBuild(t *testing.T, w *World, n toolNames, run func(Scenario)) {
	t.Helper()
	sink := writeSandboxProbe(t, w)
	w.Start()
	sc := Scenario{Name: "sandbox", Turns: []Turn{{Calls: []ToolCall{shellCall(n, "make")}}}}
	run(sc)
	res, ok := w.Model.Last(sc.Name).Result(0, 0)
	if !ok {
		t.Fatal("no tool result for make")
	}
	checkSandboxProbe(t, w, sink, res)
	rewrites, held := 0, 0
	for _, r := range w.Audit() {
		if r.Outcome == "sandbox" && r.Answer == "sandbox" {
			rewrites++
		}
		if r.Answer != "exec" {
			continue
		}
		for _, e := range r.Verdict.Evidence {
			if e.Kind == "sandbox-exec" && strings.Contains(e.Detail, "(narrowd-exec)") {
				held++
			}
		}
	}
	if rewrites != 1 {
		t.Errorf("%d hook answers rewrote a call to the sandbox, want 1", rewrites)
	}
	if held != 1 {
		t.Errorf("%d sandbox checks found narrowd-exec holding the sandbox, want 1", held)
	}
}

// TestClaudeSandbox: Claude Code runs the command narrowd's answer
// (allow with updatedInput) rewrote, through the command hook and through
// the http hook.
func TestClaudeSandbox(t *testing.T) {
	t.Parallel()
	for _, http := range []bool{false, true} {
		name := map[bool]string{false: "command", true: "http"}[http]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, bin := claudeWorld(t, WorldOptions{})
			if http {
				w.Install("claude", "--http", w.HTTPAddr)
			} else {
				w.Install("claude")
			}
			sandboxedBuild(t, w, claudeToolNames, func(sc Scenario) { runClaude(t, w, bin, sc) })
		})
	}
}

// TestCopilotSandbox: Copilot CLI runs the command narrowd's answer
// (allow with modifiedArgs) rewrote.
func TestCopilotSandbox(t *testing.T) {
	t.Parallel()
	w, bin := copilotWorld(t, WorldOptions{})
	w.Install("copilot")
	sandboxedBuild(t, w, copilotToolNames, func(sc Scenario) { runCopilot(t, w, bin, sc) })
}
