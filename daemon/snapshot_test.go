package daemon

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/rules"
	"github.com/narrowd/narrowd/sandbox/snapshot"
)

// snapWorld is a real workspace beside a real directory outside it, and
// a real snapshot store.
type snapWorld struct {
	ws, outside string
	store       *snapshot.Store
}

func newSnapWorld(t *testing.T, b snapshot.Budget) snapWorld {
	t.Helper()
	base := t.TempDir()
	w := snapWorld{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{filepath.Join(w.ws, "src"), w.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{
		"config.example.yaml": "port: 1\n", "config.yaml": "port: 2\n", "src/main.go": "package main\n",
		"coverage.out": "mode: set\n", "a.txt": "a\n", "b.txt": "b\n", "big.bin": strings.Repeat("x", 4096),
	} {
		if err := os.WriteFile(filepath.Join(w.ws, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(w.outside, "authorized_keys")
	if err := os.WriteFile(secret, []byte("key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(w.ws, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(w.ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(filepath.Join(base, "state", "snapshots"), b)
	if err != nil {
		t.Fatal(err)
	}
	w.store = s
	return w
}

func (w snapWorld) call(tool string, input map[string]any) rules.Call {
	return rules.Call{
		Agent: "claude", Event: "PermissionRequest", Phase: rules.PermissionAsk, Tool: tool,
		Cwd: w.ws, Workspaces: []string{w.ws}, Input: input,
	}
}

func bash(cmd string) map[string]any { return map[string]any{"command": cmd} }

func snapshotCount(v rules.Verdict) int {
	n := 0
	for _, e := range v.Evidence {
		if e.Kind == "snapshot" {
			if e.Strength != rules.Established || e.Effect != "reversibility<=reversible_with_effort" {
				return -1
			}
			n++
		}
	}
	return n
}

// TestSnapshotEvidence judges calls with an engine that holds a store and
// one that does not (check, the shim's fallback): the snapshot narrows
// reversibility and lets the standard profile allow a single-file write
// that reads other files; without a store, or when the snapshot cannot be
// taken safely, the label stays and the call is asked about.
func TestSnapshotEvidence(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		input   func(w snapWorld) map[string]any
		budget  snapshot.Budget
		snaps   int    // snapshot records with the store
		with    string // outcome and rule with the store
		without string // outcome and rule with no store
	}{
		{"cp over a workspace file", "Bash", func(snapWorld) map[string]any { return bash("cp config.example.yaml config.yaml") }, snapshot.Budget{},
			1, "allow write-workspace-snapshot", "ask no-match"},
		{"sort -o into a new file", "Bash", func(snapWorld) map[string]any { return bash("sort -o sorted.txt a.txt") }, snapshot.Budget{},
			1, "allow write-workspace-snapshot", "ask no-match"},
		{"sed -i of one file", "Bash", func(snapWorld) map[string]any { return bash("sed -i 's/main/app/' src/main.go") }, snapshot.Budget{},
			1, "allow write-workspace-file", "allow write-workspace-file"},
		{"Write tool", "Write", func(w snapWorld) map[string]any {
			return map[string]any{"file_path": filepath.Join(w.ws, "src/main.go"), "content": "x"}
		}, snapshot.Budget{}, 1, "allow write-workspace-file", "allow write-workspace-file"},
		{"rm of one file stays a deletion", "Bash", func(snapWorld) map[string]any { return bash("rm -f coverage.out") }, snapshot.Budget{},
			1, "ask no-match", "ask no-match"},
		{"mv changes two files", "Bash", func(snapWorld) map[string]any { return bash("mv a.txt b.txt") }, snapshot.Budget{},
			2, "ask no-match", "ask no-match"},
		{"write outside the workspace", "Bash", func(w snapWorld) map[string]any {
			return bash("cp a.txt " + filepath.Join(w.outside, "x"))
		}, snapshot.Budget{}, 0, "ask no-match", "ask no-match"},
		{"hard link of a file outside into the workspace", "Bash", func(snapWorld) map[string]any { return bash("ln /etc/hostname host.txt") }, snapshot.Budget{},
			0, "ask no-match", "ask no-match"},
		{"hard link to a file outside", "Bash", func(snapWorld) map[string]any { return bash("cp a.txt hard.txt") }, snapshot.Budget{},
			0, "ask no-match", "ask no-match"},
		{"hard link through the Write tool", "Write", func(w snapWorld) map[string]any {
			return map[string]any{"file_path": filepath.Join(w.ws, "hard.txt"), "content": "x"}
		}, snapshot.Budget{}, 0, "ask no-match", "ask no-match"},
		{"symlink to a file outside", "Bash", func(snapWorld) map[string]any { return bash("cp a.txt link.txt") }, snapshot.Budget{},
			0, "ask no-match", "ask no-match"},
		{"over the file budget", "Bash", func(snapWorld) map[string]any { return bash("cp a.txt big.bin") }, snapshot.Budget{MaxFileBytes: 1024},
			0, "ask no-match", "ask no-match"},
		{"a program that also sends", "Bash", func(snapWorld) map[string]any {
			return bash("curl -s -o page.html https://example.com")
		}, snapshot.Budget{}, 0, "ask no-match", "ask no-match"},
		{"pattern target", "Bash", func(snapWorld) map[string]any { return bash("sed -i s/a/b/ *.txt") }, snapshot.Budget{},
			0, "ask no-match", "ask no-match"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newSnapWorld(t, tc.budget)
			call := w.call(tc.tool, tc.input(w))
			with, err := NewEngine(EngineConfig{Snapshots: w.store})
			if err != nil {
				t.Fatal(err)
			}
			without, err := NewEngine(EngineConfig{})
			if err != nil {
				t.Fatal(err)
			}
			id := snapshot.NewID()
			v := with.JudgeAs(id, call, rules.Session{Known: true})
			if got := v.Decision.Outcome.String() + " " + v.Decision.Rule; got != tc.with {
				t.Errorf("with a store: %s, want %s (narrowed %v, evidence %+v)", got, tc.with, v.Narrowed, v.Evidence)
			}
			if n := snapshotCount(v); n != tc.snaps {
				t.Errorf("snapshot records = %d, want %d", n, tc.snaps)
			}
			_, err = w.store.Get(id)
			if held := err == nil; held != (tc.snaps > 0) {
				t.Errorf("store holds %s: %v, want %v (%v)", id, held, tc.snaps > 0, err)
			}
			if tc.snaps > 0 {
				if v.Narrowed.Get(rules.Reversibility) > 1 {
					t.Errorf("reversibility not narrowed: %v", v.Narrowed)
				}
				if !strings.Contains(v.Decision.Reason, "narrowd undo "+id) {
					t.Errorf("reason does not name the undo: %q", v.Decision.Reason)
				}
			} else if v.Ceiling != nil && v.Narrowed.Get(rules.Reversibility) != v.Ceiling.Get(rules.Reversibility) && tc.tool != "Bash" {
				t.Errorf("reversibility narrowed without a snapshot: %v", v.Narrowed)
			}

			nv := without.JudgeAs(snapshot.NewID(), call, rules.Session{Known: true})
			if got := nv.Decision.Outcome.String() + " " + nv.Decision.Rule; got != tc.without {
				t.Errorf("without a store: %s, want %s", got, tc.without)
			}
			if snapshotCount(nv) != 0 {
				t.Error("an engine with no store gave snapshot evidence")
			}
		})
	}
}

// TestNoSnapshotWithoutID: Judge (no id: post-tool history, check) and a
// post-tool event never take a snapshot, even with a store; a snapshot
// taken after the call ran would hold its result, not what it replaced.
func TestNoSnapshotWithoutID(t *testing.T) {
	w := newSnapWorld(t, snapshot.Budget{})
	e, err := NewEngine(EngineConfig{Snapshots: w.store})
	if err != nil {
		t.Fatal(err)
	}
	call := w.call("Bash", bash("cp config.example.yaml config.yaml"))
	if v := e.Judge(call, rules.Session{Known: true}); snapshotCount(v) != 0 || v.Decision.Outcome == rules.Allow {
		t.Errorf("Judge took a snapshot or allowed: %v %+v", v.Decision, v.Evidence)
	}
	post := call
	post.Phase = rules.PostTool
	if v := e.JudgeAs(snapshot.NewID(), post, rules.Session{Known: true}); snapshotCount(v) != 0 {
		t.Errorf("a post-tool event took a snapshot: %+v", v.Evidence)
	}
	if list, _ := w.store.List(); len(list) != 0 {
		t.Errorf("store holds %d snapshots", len(list))
	}
}

// TestOfflineKeepsAsking: the shim's in-process fallback has no store, so
// a write that only a snapshot lets run is asked about (a deny that says
// how to approve, for a headless agent).
func TestOfflineKeepsAsking(t *testing.T) {
	w := newSnapWorld(t, snapshot.Budget{})
	payload := claudePayload("PermissionRequest", "s1", "Bash", bash("cp config.example.yaml config.yaml"))
	payload = bytes.Replace(payload, []byte(`"cwd":"/tmp"`), []byte(`"cwd":"`+w.ws+`"`), 1)
	reply := Offline(OfflineConfig{Engine: EngineConfig{Workspaces: []string{w.ws}}}, "claude", payload, agent.Options{})
	if strings.Contains(string(reply.Stdout), `"behavior":"allow"`) {
		t.Fatalf("the fallback allowed a write that needs a snapshot: %s", reply.Stdout)
	}
	if list, _ := w.store.List(); len(list) != 0 {
		t.Error("the fallback took a snapshot")
	}
}

// TestHandleSnapshotUndo runs a call through the daemon on its real
// socket: the snapshot is keyed by the audit id the reply carries, the
// audit record names it, and restoring it gives the file back byte for
// byte after the "agent" overwrote it.
func TestHandleSnapshotUndo(t *testing.T) {
	w, d, env := copyThroughDaemon(t)
	if !strings.Contains(string(env.Reply.Stdout), `"behavior":"allow"`) {
		t.Fatalf("reply: %s", env.Reply.Stdout)
	}
	rec := auditIDs(t, d.cfg.AuditDir)[env.ID]
	if rec == nil || !strings.Contains(rec.Reason, "narrowd undo "+env.ID) {
		t.Fatalf("audit record does not name the undo: %+v", rec)
	}
	store, err := snapshot.Open(SnapshotDir(d.cfg.StateDir), snapshot.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(w.ws, "config.yaml")
	before, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte("port: 1\n"), 0o644); err != nil { // what cp does
		t.Fatal(err)
	}
	if _, err := store.Restore(env.ID, false); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(p)
	if !bytes.Equal(before, after) {
		t.Errorf("undo gave %q, want %q", after, before)
	}
}

// TestStoreIsSensitive: the store is a sensitive path, so a call that
// writes into it (to forge an index for a later undo) is asked about even
// when the store sits inside the workspace.
func TestStoreIsSensitive(t *testing.T) {
	w := newSnapWorld(t, snapshot.Budget{})
	dir := filepath.Join(w.ws, ".state", "snapshots")
	e, err := NewEngine(EngineConfig{SnapshotDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"cp a.txt .state/snapshots/index/0123456789abcdef01234567.json", "cat .state/snapshots/index/x.json"} {
		v := e.JudgeAs(snapshot.NewID(), w.call("Bash", bash(cmd)), rules.Session{Known: true})
		if v.Decision.Outcome == rules.Allow || snapshotCount(v) != 0 {
			t.Errorf("%q: %s by %s with %d snapshot records", cmd, v.Decision.Outcome, v.Decision.Rule, snapshotCount(v))
		}
	}
	// The same engine still allows an ordinary write.
	v := e.JudgeAs(snapshot.NewID(), w.call("Bash", bash("cp config.example.yaml config.yaml")), rules.Session{Known: true})
	if v.Decision.Outcome != rules.Allow {
		t.Errorf("ordinary write: %s by %s", v.Decision.Outcome, v.Decision.Rule)
	}
}

// TestSnapshotApplyPatch: Codex's apply_patch names its files; the daemon
// preserves each (an added file as absent) before the patch is allowed,
// and a patch that deletes a file is still asked about.
func TestSnapshotApplyPatch(t *testing.T) {
	w := newSnapWorld(t, snapshot.Budget{})
	e, err := NewEngine(EngineConfig{Snapshots: w.store})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		patch string
		snaps int
		want  rules.Outcome
	}{
		{"*** Begin Patch\n*** Update File: src/main.go\n@@\n-package main\n+package app\n*** End Patch", 1, rules.Allow},
		{"*** Begin Patch\n*** Add File: src/new.go\n+package main\n*** Update File: a.txt\n@@\n-a\n+A\n*** End Patch", 2, rules.Ask},
		{"*** Begin Patch\n*** Delete File: b.txt\n*** End Patch", 1, rules.Ask},
		{"*** Begin Patch\n*** Update File: ../outside/authorized_keys\n@@\n-key\n+evil\n*** End Patch", 0, rules.Ask},
	}
	for _, tc := range tests {
		call := rules.Call{Agent: "codex", Event: "PreToolUse", Phase: rules.PreTool, Tool: "apply_patch",
			Cwd: w.ws, Workspaces: []string{w.ws}, Input: map[string]any{"command": tc.patch}}
		v := e.JudgeAs(snapshot.NewID(), call, rules.Session{Known: true})
		if n := snapshotCount(v); n != tc.snaps || v.Decision.Outcome != tc.want {
			t.Errorf("%q: %d snapshot records, %s by %s; want %d, %s", tc.patch, n, v.Decision.Outcome, v.Decision.Rule, tc.snaps, tc.want)
		}
	}
}

// BenchmarkJudgeSnapshot is the cost a snapshot adds to one decision: a
// Write of a 4 KiB workspace file judged with and without a store (the
// temp directory's file system; fsyncs included). Not run by CI:
//
//	go test -run '^$' -bench JudgeSnapshot ./daemon
func BenchmarkJudgeSnapshot(b *testing.B) {
	for _, withStore := range []bool{false, true} {
		name := "no-store"
		if withStore {
			name = "store"
		}
		b.Run(name, func(b *testing.B) {
			base := b.TempDir()
			ws := filepath.Join(base, "ws")
			if err := os.MkdirAll(ws, 0o755); err != nil {
				b.Fatal(err)
			}
			p := filepath.Join(ws, "main.go")
			if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 4096), 0o644); err != nil {
				b.Fatal(err)
			}
			cfg := EngineConfig{}
			if withStore {
				cfg.SnapshotDir = filepath.Join(base, "state", "snapshots")
			}
			e, err := NewEngine(cfg)
			if err != nil {
				b.Fatal(err)
			}
			call := rules.Call{Agent: "claude", Event: "PreToolUse", Phase: rules.PreTool, Tool: "Write",
				Cwd: ws, Workspaces: []string{ws}, Input: map[string]any{"file_path": p, "content": "x"}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v := e.JudgeAs(snapshot.NewID(), call, rules.Session{Known: true})
				if withStore && snapshotCount(v) != 1 {
					b.Fatalf("no snapshot: %+v", v.Evidence)
				}
			}
		})
	}
}

// TestSnapshotMvUndo: a rename is asked about (two files change), but the
// snapshot is held, so once a person approved it undo brings the old
// name back and removes the new one.
func TestSnapshotMvUndo(t *testing.T) {
	w := newSnapWorld(t, snapshot.Budget{})
	e, err := NewEngine(EngineConfig{Snapshots: w.store})
	if err != nil {
		t.Fatal(err)
	}
	id := snapshot.NewID()
	v := e.JudgeAs(id, w.call("Bash", bash("mv a.txt renamed.txt")), rules.Session{Known: true})
	if v.Decision.Outcome != rules.Ask || snapshotCount(v) != 2 {
		t.Fatalf("%s by %s with %d snapshot records", v.Decision.Outcome, v.Decision.Rule, snapshotCount(v))
	}
	if err := os.Rename(filepath.Join(w.ws, "a.txt"), filepath.Join(w.ws, "renamed.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.store.Restore(id, false); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(w.ws, "a.txt")); err != nil || string(got) != "a\n" {
		t.Errorf("a.txt = %q, %v", got, err)
	}
	if _, err := os.Lstat(filepath.Join(w.ws, "renamed.txt")); !os.IsNotExist(err) {
		t.Errorf("renamed.txt still there: %v", err)
	}
}

// TestUndoHint: only a call that runs (allowed, or asked and then
// approved) is told how to undo it; a refused call never ran.
func TestUndoHint(t *testing.T) {
	held := []rules.Evidence{{Kind: "snapshot", Strength: rules.Established, Subject: "f"}}
	guessed := []rules.Evidence{{Kind: "snapshot", Strength: rules.Guess, Subject: "f"}}
	tests := []struct {
		name    string
		outcome rules.Outcome
		ev      []rules.Evidence
		want    string
	}{
		{"allow", rules.Allow, held, "undo with `narrowd undo ID`"},
		{"ask", rules.Ask, held, "if a person approves, `narrowd undo ID`"},
		{"deny", rules.Deny, held, ""},
		{"sandbox", rules.Sandbox, held, ""},
		{"no-snapshot", rules.Allow, nil, ""},
		{"not-established", rules.Allow, guessed, ""},
	}
	for _, tt := range tests {
		got := undoHint("ID", tt.outcome, tt.ev)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("%s: undoHint = %q, want it to contain %q", tt.name, got, tt.want)
		}
	}
}

// TestPruneSnapshots: the daemon prunes snapshots older than SnapshotKeep
// from its store, and keeps younger ones.
func TestPruneSnapshots(t *testing.T) {
	_, d, env := copyThroughDaemon(t)
	store, err := snapshot.Open(SnapshotDir(d.cfg.StateDir), snapshot.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		snaps, err := store.List()
		if err != nil {
			t.Fatal(err)
		}
		return len(snaps)
	}
	if count() != 1 {
		t.Fatalf("%d snapshots after the call %s, want 1", count(), env.ID)
	}
	d.Server.pruneOnce(SnapshotDir(d.cfg.StateDir), time.Hour)
	if count() != 1 {
		t.Error("a snapshot younger than SnapshotKeep was pruned")
	}
	time.Sleep(time.Millisecond)
	d.Server.pruneOnce(SnapshotDir(d.cfg.StateDir), time.Nanosecond)
	if count() != 0 {
		t.Error("a snapshot older than SnapshotKeep was kept")
	}
}

// copyThroughDaemon serves a daemon over a snapshot world and sends it,
// on its real socket, a permission request for a cp that overwrites a
// workspace file.
func copyThroughDaemon(t *testing.T) (snapWorld, *testDaemon, Envelope) {
	t.Helper()
	w := newSnapWorld(t, snapshot.Budget{})
	d := startDaemon(t, func(c *Config) { c.Engine.Workspaces = []string{w.ws} })
	payload := claudePayload("PermissionRequest", "s1", "Bash", bash("cp config.example.yaml config.yaml"))
	payload = bytes.Replace(payload, []byte(`"cwd":"/tmp"`), []byte(`"cwd":"`+w.ws+`"`), 1)
	env, err := d.client().Hook(context.Background(), "claude", payload, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w, d, env
}
