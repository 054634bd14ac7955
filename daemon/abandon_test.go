package daemon

import (
	"slices"
	"testing"
	"time"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/daemon/hookclient"
)

// TestLateCallAbandoned: a call that reaches the daemon after the shim's
// deadline (queued while the daemon was stopped) is not judged and is
// recorded as abandoned, never as the answer nobody received; a call in
// time is judged and recorded as answered.
func TestLateCallAbandoned(t *testing.T) {
	d := startDaemon(t, nil)
	payload := claudePayload("PreToolUse", "s1", "Bash", map[string]any{"command": "ls"})
	for _, tc := range []struct {
		name     string
		deadline time.Time
		want     string
	}{
		{"in time", time.Now().Add(time.Minute), "abstain"},
		{"late", time.Now().Add(-time.Second), "abandoned"},
	} {
		r, err := hookclient.Ask(d.socket, time.Now().Add(10*time.Second), hookclient.Request{
			Agent: "claude", Payload: payload, Deadline: tc.deadline})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got *Record
		if err := ReadAudit(d.cfg.AuditDir, func(rec *Record) error {
			if rec.ID == r.ID || r.ID == "" {
				got = rec
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if got == nil || got.Answer != tc.want {
			t.Fatalf("%s: record %+v, want answer %s", tc.name, got, tc.want)
		}
		if tc.want == "abandoned" && got.Verdict != nil {
			t.Errorf("%s: a call past its deadline was judged", tc.name)
		}
	}
}

// TestOfflineRecords: the shim's in-process fallback appends its decision
// to the audit log, via "fallback", with the answer it gave.
func TestOfflineRecords(t *testing.T) {
	dir := t.TempDir()
	ws := t.TempDir()
	for _, cmd := range []string{"ls", "rm -rf ~/x"} {
		payload := claudePayload("PreToolUse", "s1", "Bash", map[string]any{"command": cmd})
		Offline(OfflineConfig{Engine: EngineConfig{Workspaces: []string{ws}}, AuditDir: dir}, "claude", payload, agent.Options{})
	}
	var got []string
	if err := ReadAudit(dir, func(r *Record) error {
		got = append(got, r.Via+":"+r.Summary+":"+r.Answer)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"fallback:ls:abstain", "fallback:rm -rf ~/x:ask"}; !slices.Equal(got, want) {
		t.Errorf("records %q, want %q", got, want)
	}
}
