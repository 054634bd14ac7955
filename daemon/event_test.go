package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/narrowd/narrowd/daemon/agent"
)

// copilotCamel is a camelCase Copilot payload: it names no event.
func copilotCamel(session, cwd, command string) []byte {
	b, _ := json.Marshal(map[string]any{
		"sessionId": session, "timestamp": 1796035192663, "cwd": cwd,
		"toolName": "bash", "toolArgs": map[string]any{"command": command},
	})
	return b
}

// cursorShell is a Cursor beforeShellExecution payload.
func cursorShell(cwd, command string) []byte {
	b, _ := json.Marshal(map[string]any{
		"conversation_id": "c1", "generation_id": "g1", "hook_event_name": "beforeShellExecution",
		"cursor_version": "2.0.0", "workspace_roots": []string{cwd}, "cwd": cwd, "command": command,
	})
	return b
}

// The configured event reaches the daemon from the shim: a camelCase
// Copilot permissionRequest is judged as one (a prompt avoided, in
// permissionRequest's reply shape), where without --event it reads as
// preToolUse and is abstained on.
func TestCopilotEventFromShim(t *testing.T) {
	d := startDaemon(t, nil)
	ws := shortDir(t)
	p := copilotCamel("k1", ws, "ls -la")
	c := d.client()

	env, err := c.HookEvent(context.Background(), "copilot", "permissionRequest", p, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := auditIDs(t, d.cfg.AuditDir)
	rec := recs[env.ID]
	if rec == nil {
		t.Fatalf("no audit record %q", env.ID)
	}
	if rec.Event != "permissionRequest" || rec.Answer != "allow" || !rec.PromptAvoided {
		t.Fatalf("record event=%q answer=%q avoided=%v, want permissionRequest allow avoided", rec.Event, rec.Answer, rec.PromptAvoided)
	}
	if !bytes.Contains(env.Stdout, []byte(`"behavior":"allow"`)) {
		t.Errorf("reply %s is not a permissionRequest allow", env.Stdout)
	}
	if got := metricSum(d.scrape(t), "narrowd_prompts_avoided_total", map[string]string{"agent": "copilot"}); got != 1 {
		t.Errorf("prompts avoided = %v, want 1", got)
	}

	// No --event: today's behaviour, preToolUse.
	env, err = c.Hook(context.Background(), "copilot", p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec := auditIDs(t, d.cfg.AuditDir)[env.ID]; rec == nil || rec.Event != "preToolUse" || rec.Answer != "abstain" {
		t.Fatalf("without --event: %+v", rec)
	}

	// A configured event the payload contradicts blocks.
	pre := claudePayload("PreToolUse", "s1", "Bash", map[string]any{"command": "ls"})
	env, err = c.HookEvent(context.Background(), "claude", "PostToolUse", pre, nil)
	if err != nil {
		t.Fatal(err)
	}
	if env.ExitCode != 2 {
		t.Errorf("contradicted event: exit %d, stdout %s", env.ExitCode, env.Stdout)
	}

	// The in-process fallback reads the event the same way.
	r := OfflineEvent(OfflineConfig{}, "copilot", "permissionRequest", copilotCamel("k2", ws, "rm -rf /"), agent.Options{})
	if r.ExitCode != 2 || !bytes.Contains(r.Stdout, []byte(`"behavior":"deny"`)) {
		t.Errorf("offline permissionRequest deny: exit %d stdout %s", r.ExitCode, r.Stdout)
	}
}

// Copilot and Cursor run the hooks in .claude/settings.json too: their
// payloads reaching `narrowd hook claude` are judged as theirs and
// answered in their dialect, by the daemon and in-process.
func TestAgentMismatchAnswersRealAgent(t *testing.T) {
	d := startDaemon(t, nil)
	ws := shortDir(t)
	for _, tc := range []struct {
		real    string
		payload []byte
	}{
		{agent.Copilot, copilotCamel("k3", ws, "rm -rf ~/x")},
		{agent.Cursor, cursorShell(ws, "rm -rf ~/x")},
		{agent.Copilot, copilotCamel("k4", ws, "ls -la")},
		{agent.Cursor, cursorShell(ws, "ls -la")},
	} {
		want, _ := d.Handle(tc.real, tc.payload, "socket", agent.Options{})
		got, id := d.Handle(agent.Claude, tc.payload, "socket", agent.Options{})
		if !bytes.Equal(got.Stdout, want.Stdout) || got.ExitCode != want.ExitCode || got.Stderr != want.Stderr {
			t.Errorf("%s payload to the claude hook: got %+v, want %s's reply %+v", tc.real, got, tc.real, want)
		}
		if rec := auditIDs(t, d.cfg.AuditDir)[id]; rec == nil || rec.Agent != tc.real {
			t.Errorf("%s payload: audit record %+v, want agent %s", tc.real, rec, tc.real)
		}
		offWant := Offline(OfflineConfig{}, tc.real, tc.payload, agent.Options{})
		offGot := Offline(OfflineConfig{}, agent.Claude, tc.payload, agent.Options{})
		if !bytes.Equal(offGot.Stdout, offWant.Stdout) || offGot.ExitCode != offWant.ExitCode {
			t.Errorf("%s payload offline: got %+v, want %+v", tc.real, offGot, offWant)
		}
	}
	// A payload whose agent cannot be told still fails, never opens.
	for _, p := range [][]byte{[]byte(`{"tool":"x"}`), []byte(`not json`)} {
		r, _ := d.Handle(agent.Claude, p, "socket", agent.Options{})
		if r.ExitCode != 2 {
			t.Errorf("%s: exit %d, want a block", p, r.ExitCode)
		}
		if r := Offline(OfflineConfig{}, agent.Claude, p, agent.Options{}); r.ExitCode != 2 {
			t.Errorf("offline %s: exit %d, want a block", p, r.ExitCode)
		}
	}
}
