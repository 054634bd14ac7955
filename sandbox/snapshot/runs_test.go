package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrowd/narrowd/sandbox/changes"
)

// runInOverlay runs script with the layer mounted over its root, as the
// sandbox does: an unprivileged overlay in a user and mount namespace.
func runInOverlay(t *testing.T, l Layer, script string) {
	t.Helper()
	merged := t.TempDir()
	sh := fmt.Sprintf("mount -t overlay overlay -o userxattr,lowerdir=%s,upperdir=%s,workdir=%s %s && cd %s && sh -ec '%s'",
		l.Root, l.Upper, l.Work, merged, merged, script)
	out, err := exec.Command("unshare", "-rm", "sh", "-c", sh).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "mount") || strings.Contains(string(out), "unshare") {
			t.Skipf("no unprivileged overlay here: %v: %s", err, out)
		}
		t.Fatalf("run: %v: %s", err, out)
	}
}

// treeOf reads a workspace as path → type, mode and content.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		v := fi.Mode().String()
		switch {
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			v += " " + string(b)
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		}
		out[rel] = v
		return nil
	})
	return out
}

func sameTree(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %s: got %q, want %q", what, p, got[p], w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: extra %s", what, p)
		}
	}
}

// TestRunFinishUndoRedo: a run deletes a tree, rewrites and creates;
// FinishRun applies it, the index lists it, undo restores every byte
// and mode, and undoing the undo brings the run's result back.
func TestRunFinishUndoRedo(t *testing.T) {
	f := newFixture(t, Budget{})
	f.write(t, "src/a.go", []byte("package a\n"), 0o644)
	f.write(t, "src/deep/b.go", []byte("package b\n"), 0o600)
	f.write(t, "README", []byte("readme\n"), 0o644)
	original := treeOf(t, f.ws)
	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	layers, err := f.store.PrepareRun(testID, []string{f.ws}, start)
	if err != nil {
		t.Fatal(err)
	}
	if snap, err := f.store.Get(testID); err != nil || snap.Runs[0].State != RunRunning {
		t.Fatalf("prepared run: %v %+v", err, snap)
	}
	runInOverlay(t, layers[0], "rm -rf src; echo changed > README; mkdir out; echo bin > out/app; ln -s /etc/passwd out/link")
	sameTree(t, "the run must not write the workspace", original, treeOf(t, f.ws))

	snap, err := f.store.FinishRun(testID, changes.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	r := snap.Runs[0]
	if r.State != RunApplied {
		t.Fatalf("state %s: %s", r.State, r.Why)
	}
	acts := map[string]string{}
	for _, c := range r.Changes {
		acts[c.Path] = c.Action
	}
	if fmt.Sprint(acts) != "map[README:changed out:created src:deleted]" {
		t.Fatalf("changes: %v", acts)
	}
	result := treeOf(t, f.ws)
	if !strings.HasSuffix(result["README"], "changed\n") || result["out/link"] == "" {
		t.Fatalf("not applied: %v", result)
	}
	if _, err := os.Stat(f.store.runDir(testID, 0)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the applied layer is still there: %v", err)
	}

	rep, err := f.store.Restore(testID, false)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "undo", original, treeOf(t, f.ws))
	if rep.Saved == "" {
		t.Fatal("undo kept nothing of what it replaced")
	}
	if _, err := f.store.Restore(testID, false); err != nil {
		t.Fatalf("a second undo of the same run: %v", err)
	}
	sameTree(t, "second undo", original, treeOf(t, f.ws))
	if _, err := f.store.Restore(rep.Saved, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "redo", result, treeOf(t, f.ws))
}

// TestRunOverBudgetPending: a run over the budget is not applied; the
// person applies or discards it.
func TestRunOverBudgetPending(t *testing.T) {
	for _, choice := range []string{"apply", "discard"} {
		t.Run(choice, func(t *testing.T) {
			f := newFixture(t, Budget{})
			f.write(t, "a", []byte("a\n"), 0o644)
			original := treeOf(t, f.ws)
			layers, err := f.store.PrepareRun(testID, []string{f.ws}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			runInOverlay(t, layers[0], "rm a; echo 1 > b; echo 2 > c")
			snap, err := f.store.FinishRun(testID, changes.Budget{MaxEntries: 2})
			if err != nil {
				t.Fatal(err)
			}
			if r := snap.Runs[0]; r.State != RunPending || !strings.Contains(r.Why, "budget") {
				t.Fatalf("got %s (%s), want pending over budget", r.State, r.Why)
			}
			sameTree(t, "pending", original, treeOf(t, f.ws))
			if _, err := f.store.FinishRun(testID, changes.Budget{}); !errors.Is(err, ErrRunState) {
				t.Fatalf("finishing twice: %v", err)
			}
			if choice == "discard" {
				if _, err := f.store.DiscardRun(testID); err != nil {
					t.Fatal(err)
				}
				sameTree(t, "discarded", original, treeOf(t, f.ws))
				if _, err := f.store.ApplyRun(testID, false); !errors.Is(err, ErrRunState) {
					t.Fatalf("apply after discard: %v", err)
				}
				return
			}
			snap, err = f.store.ApplyRun(testID, false)
			if err != nil || snap.Runs[0].State != RunApplied {
				t.Fatalf("apply: %v %+v", err, snap.Runs)
			}
			if b, _ := os.ReadFile(filepath.Join(f.ws, "c")); !bytes.Equal(b, []byte("2\n")) {
				t.Fatalf("c: %q", b)
			}
			if _, err := f.store.Restore(testID, false); err != nil {
				t.Fatal(err)
			}
			sameTree(t, "undo of the applied run", original, treeOf(t, f.ws))
		})
	}
}

// TestRunConflictPending: a file the person edits during the run is not
// clobbered; the run stays pending until applied with force, and the
// person's version is then kept as an original.
func TestRunConflictPending(t *testing.T) {
	f := newFixture(t, Budget{})
	f.write(t, "a", []byte("a\n"), 0o644)
	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	layers, err := f.store.PrepareRun(testID, []string{f.ws}, start)
	if err != nil {
		t.Fatal(err)
	}
	runInOverlay(t, layers[0], "echo run > a")
	f.write(t, "a", []byte("person\n"), 0o644)
	snap, err := f.store.FinishRun(testID, changes.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if r := snap.Runs[0]; r.State != RunPending || !strings.Contains(r.Why, "during the run") {
		t.Fatalf("got %s (%s)", r.State, r.Why)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "a")); string(b) != "person\n" {
		t.Fatalf("clobbered: %q", b)
	}
	if _, err := f.store.ApplyRun(testID, false); err != nil {
		t.Fatal(err)
	}
	if snap, _ := f.store.Get(testID); snap.Runs[0].State != RunPending {
		t.Fatalf("apply without force clobbered: %s", snap.Runs[0].State)
	}
	if snap, err := f.store.ApplyRun(testID, true); err != nil || snap.Runs[0].State != RunApplied {
		t.Fatalf("apply --force: %v %+v", err, snap.Runs)
	}
	if _, err := f.store.Restore(testID, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "a")); string(b) != "person\n" {
		t.Fatalf("undo did not bring the person's version back: %q", b)
	}
}

// TestRunForgedIndexRefused: an index whose change paths leave the root
// is refused before anything moves.
func TestRunForgedIndexRefused(t *testing.T) {
	f := newFixture(t, Budget{})
	for _, path := range []string{"../outside/x", "/etc/passwd", "a/../../b", "."} {
		snap := Snapshot{ID: testID, Time: time.Now(), Runs: []Run{{State: RunApplied,
			Set: changes.Set{Root: f.ws, Changes: []changes.Change{{Path: path, Action: changes.Created, After: []changes.Entry{{Path: path, Type: "file"}}}}}}}}
		// The kept directory exists, so only the paths can make undo refuse.
		os.MkdirAll(f.store.keepDir(testID, 0), 0o700)
		data, _ := json.Marshal(snap)
		if err := os.WriteFile(f.store.indexPath(testID), data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.Restore(testID, false); !errors.Is(err, ErrTampered) {
			t.Errorf("%q: got %v, want tampered", path, err)
		}
	}
}

// TestRunPreviewAndPrune: show reads a pending run's changes from its
// layer without applying them, and prune drops the layer and the kept
// originals with the index.
func TestRunPreviewAndPrune(t *testing.T) {
	f := newFixture(t, Budget{})
	f.write(t, "a", []byte("a\n"), 0o644)
	original := treeOf(t, f.ws)
	layers, err := f.store.PrepareRun(testID, []string{f.ws}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	runInOverlay(t, layers[0], "rm a; mkdir -p d/e; echo x > d/e/f")
	if _, err := f.store.FinishRun(testID, changes.Budget{MaxEntries: 1}); err != nil {
		t.Fatal(err)
	}
	snap, err := f.store.Preview(testID)
	if err != nil {
		t.Fatal(err)
	}
	acts := map[string]string{}
	for _, c := range snap.Runs[0].Changes {
		acts[c.Path] = c.Action
	}
	if fmt.Sprint(acts) != "map[a:deleted d:created]" {
		t.Fatalf("preview: %v", acts)
	}
	sameTree(t, "preview applies nothing", original, treeOf(t, f.ws))
	if _, err := f.store.Prune(time.Nanosecond, 0); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"runs/" + testID, "sets/" + testID, "runs/" + testID + ".lock", "index/" + testID + ".json"} {
		if _, err := os.Lstat(filepath.Join(f.store.Dir(), d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("prune left %s: %v", d, err)
		}
	}
}

// TestRunInterruptedApplyUndone: narrowd stops half way through applying
// a run (here: only its first changes moved, the index already saying
// applying); undo still puts every original back.
func TestRunInterruptedApplyUndone(t *testing.T) {
	f := newFixture(t, Budget{})
	f.write(t, "a", []byte("a\n"), 0o644)
	f.write(t, "t/x", []byte("x\n"), 0o600)
	f.write(t, "z", []byte("z\n"), 0o644)
	original := treeOf(t, f.ws)
	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	layers, err := f.store.PrepareRun(testID, []string{f.ws}, start)
	if err != nil {
		t.Fatal(err)
	}
	runInOverlay(t, layers[0], "echo A > a; rm -rf t; echo Z > z; echo n > new")
	set, err := changes.Read(layers[0].Upper, f.ws, start, changes.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := f.store.Get(testID)
	snap.Runs[0].Set, snap.Runs[0].State = set, RunApplying
	if err := f.store.writeIndex(snap); err != nil {
		t.Fatal(err)
	}
	keep := f.store.keepDir(testID, 0)
	os.MkdirAll(keep, 0o700)
	half := set
	half.Changes = set.Changes[:2]
	if err := changes.Apply(&half, layers[0].Upper, keep); err != nil {
		t.Fatal(err)
	}
	if same := fmt.Sprint(treeOf(t, f.ws)) == fmt.Sprint(original); same {
		t.Fatal("the half apply changed nothing")
	}
	if _, err := f.store.Restore(testID, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "undo of an interrupted apply", original, treeOf(t, f.ws))
	if _, err := os.Stat(f.store.runDir(testID, 0)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the layer of an undone interrupted run is still there: %v", err)
	}
}
