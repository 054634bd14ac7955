package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrowd/narrowd/daemon"
	"github.com/narrowd/narrowd/sandbox/changes"
	"github.com/narrowd/narrowd/sandbox/snapshot"
)

// TestShowApplyUndoDiscard drives a sandboxed run over the budget through
// the commands a person uses: show lists what it would create, change
// and delete, apply applies it, undo puts it back, and a second run is
// discarded.
func TestShowApplyUndoDiscard(t *testing.T) {
	base := t.TempDir()
	state, ws := filepath.Join(base, "state"), filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src", "a.go"), []byte("package a\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "README"), []byte("readme\n"), 0o644)
	store, err := snapshot.Open(daemon.SnapshotDir(state), snapshot.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	narrowd := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		code := run(context.Background(), e, append(args[:1:1], append([]string{"--state-dir", state}, args[1:]...)...))
		return code, out.String() + errb.String()
	}
	sandboxRun := func(id, script string) {
		layers, err := store.PrepareRun(id, []string{ws}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		l := layers[0]
		merged := t.TempDir()
		sh := fmt.Sprintf("mount -t overlay overlay -o userxattr,lowerdir=%s,upperdir=%s,workdir=%s %s && cd %s && sh -ec '%s'", l.Root, l.Upper, l.Work, merged, merged, script)
		if out, err := exec.Command("unshare", "-rm", "sh", "-c", sh).CombinedOutput(); err != nil {
			t.Skipf("no unprivileged overlay here: %v: %s", err, out)
		}
		if _, err := store.FinishRun(id, changes.Budget{MaxEntries: 1}); err != nil {
			t.Fatal(err)
		}
	}
	const id = "00112233445566778899aabb"
	sandboxRun(id, "rm -rf src; echo new > README; echo x > created")
	code, out := narrowd("show", id)
	for _, want := range []string{"NOT applied", "deleted  " + filepath.Join(ws, "src"), "changed  " + filepath.Join(ws, "README"), "created  " + filepath.Join(ws, "created"), "narrowd apply " + id} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show: exit %d, no %q in\n%s", code, want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "created")); err == nil {
		t.Fatal("a pending run was applied")
	}
	if code, out := narrowd("apply", id); code != 0 || !strings.Contains(out, "changes applied") {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "README")); string(b) != "new\n" {
		t.Fatalf("README after apply: %q", b)
	}
	if code, out := narrowd("undo", id); code != 0 {
		t.Fatalf("undo: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "src", "a.go")); string(b) != "package a\n" {
		t.Fatalf("src/a.go after undo: %q", b)
	}
	if code, out := narrowd("show", id); code != 0 || !strings.Contains(out, "undone") {
		t.Fatalf("show after undo: exit %d\n%s", code, out)
	}

	const second = "00112233445566778899aabc"
	sandboxRun(second, "rm README; echo y > other")
	if code, out := narrowd("discard", second); code != 0 || !strings.Contains(out, "discarded") {
		t.Fatalf("discard: exit %d\n%s", code, out)
	}
	if code, _ := narrowd("apply", second); code == 0 {
		t.Fatal("a discarded run was applied")
	}
	if _, err := os.Stat(filepath.Join(ws, "README")); err != nil {
		t.Fatal("discard changed the workspace")
	}
}
