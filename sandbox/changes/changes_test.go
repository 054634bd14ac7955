package changes

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// node is what a tree comparison looks at: type, permission bits, and
// the content of a file or the target of a symlink.
type node struct {
	typ     string
	mode    fs.FileMode
	content string
}

// snapshotTree reads every node beneath dir without following symlinks.
func snapshotTree(t *testing.T, dir string) map[string]node {
	t.Helper()
	out := map[string]node{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		n := node{mode: fi.Mode()}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			n.typ, n.content = "file", hex.EncodeToString(sum[:])
		case fi.IsDir():
			n.typ = "dir"
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			n.typ, n.content = "symlink", target
		case fi.Mode()&fs.ModeNamedPipe != 0:
			n.typ = "fifo"
		default:
			n.typ = "other"
		}
		out[rel] = n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffTrees(want, got map[string]node) string {
	var lines []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			lines = append(lines, "missing "+p)
		case g != w:
			lines = append(lines, fmt.Sprintf("differs %s: want %v, got %v", p, w, g))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			lines = append(lines, "extra "+p)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// makeWorkspace writes the tree every hostile build starts from.
func makeWorkspace(t *testing.T, dir string) {
	t.Helper()
	big := make([]byte, 3<<20+5)
	rand.Read(big)
	files := map[string]string{
		"a.txt":                 "original a\n",
		"b.txt":                 "original b\n",
		"script.sh":             "#!/bin/sh\necho hi\n",
		"big.bin":               string(big),
		"tree/x/y/z.go":         "package z\n",
		"tree/x/w.go":           "package x\n",
		"tree/top.txt":          "top\n",
		"dir1/inner.txt":        "inner\n",
		"replaced/old1":         "old1\n",
		"replaced/deep/old2":    "old2\n",
		"sub/file":              "a file that becomes a dir\n",
		"sub/keep":              "kept\n",
		"keepdir/k":             "k\n",
		"link-target.txt":       "target\n",
		"node_modules/m/i.js":   "module.exports = 1\n",
		"node_modules/m/p.json": "{}\n",
	}
	for rel, data := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("link-target.txt", filepath.Join(dir, "old-link")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, "script.sh"), 0o644)
	os.Chmod(filepath.Join(dir, "keepdir"), 0o755)
}

// hostileBuild deletes a tree, rewrites, renames, creates, chmods, makes
// symlinks (one pointing out of the workspace) and fifos, replaces a
// tree and turns a file into a directory.
const hostileBuild = `set -e
rm -rf tree node_modules
echo rewritten > a.txt
mv b.txt b2.txt
mv dir1 dir2
echo new > new.txt
ln new.txt new-hard.txt
mkdir -p newdir/sub && echo deep > newdir/sub/f && chmod 700 newdir
chmod 755 script.sh
chmod 700 keepdir
ln -s /etc/passwd evil-link
ln -s ../../outside sub/escape
rm old-link && ln -s /etc/shadow old-link
mkfifo fifo1
rm -rf replaced && mkdir replaced && echo only > replaced/only
rm sub/file && mkdir sub/file && echo f > sub/file/inside
printf more >> big.bin
`

// overlayRun runs script with the overlay of lower mounted, as narrowd's
// sandbox does (an unprivileged mount with userxattr in a user and mount
// namespace).
func overlayRun(t *testing.T, lower, upper, work, script string) {
	t.Helper()
	merged := t.TempDir()
	mount := fmt.Sprintf("mount -t overlay overlay -o userxattr,lowerdir=%s,upperdir=%s,workdir=%s %s && cd %s && sh -c %s",
		lower, upper, work, merged, merged, shq(script))
	out, err := exec.Command("unshare", "-rm", "sh", "-c", mount).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "mount") || strings.Contains(string(out), "unshare") {
			t.Skipf("no unprivileged overlay here: %v: %s", err, out)
		}
		t.Fatalf("hostile build: %v: %s", err, out)
	}
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// directRun runs script in a copy of the workspace, without any overlay:
// the oracle of what applying the run's changes must leave.
func directRun(t *testing.T, src, script string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ws")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dst
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("direct build: %v: %s", err, out)
	}
	return dst
}

type setup struct {
	ws, upper, work, keep, save string
}

func newSetup(t *testing.T) setup {
	base := t.TempDir()
	s := setup{ws: filepath.Join(base, "ws"), upper: filepath.Join(base, "state/upper"), work: filepath.Join(base, "state/work"),
		keep: filepath.Join(base, "state/keep"), save: filepath.Join(base, "state/save")}
	for _, d := range []string{s.ws, s.upper, s.work, s.keep, s.save, filepath.Join(base, "outside")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(s.ws, 0o755)
	return s
}

// TestHostileBuildApplyUndo runs a hostile build in a real overlay,
// applies it, checks the workspace is what running the build directly
// leaves, undoes it and checks every byte and mode is back, then undoes
// the undo.
func TestHostileBuildApplyUndo(t *testing.T) {
	s := newSetup(t)
	makeWorkspace(t, s.ws)
	original := snapshotTree(t, s.ws)
	oracle := snapshotTree(t, directRun(t, s.ws, hostileBuild))
	start := time.Now()
	time.Sleep(20 * time.Millisecond) // ctime granularity: the fixture predates the run
	overlayRun(t, s.ws, s.upper, s.work, hostileBuild)
	if d := diffTrees(original, snapshotTree(t, s.ws)); d != "" {
		t.Fatalf("the run wrote the real workspace:\n%s", d)
	}

	set, err := Read(s.upper, s.ws, start, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range set.Changes {
		got[c.Path] = c.Action
	}
	want := map[string]string{
		"tree": Deleted, "node_modules": Deleted, "a.txt": Changed, "b.txt": Deleted, "b2.txt": Created,
		"dir1": Deleted, "dir2": Created, "new.txt": Created, "new-hard.txt": Created, "newdir": Created,
		"script.sh": Changed, "keepdir": Changed, "evil-link": Created, "sub/escape": Created, "old-link": Changed,
		"fifo1": Created, "replaced": Changed, "sub/file": Changed, "big.bin": Changed,
	}
	for p, a := range want {
		if got[p] != a {
			t.Errorf("change of %s: got %q, want %q", p, got[p], a)
		}
	}
	for p, a := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("unexpected change %s %s", a, p)
		}
	}

	if err := Apply(&set, s.upper, s.keep); err != nil {
		t.Fatal(err)
	}
	applied := snapshotTree(t, s.ws)
	if d := diffTrees(oracle, applied); d != "" {
		t.Fatalf("applied workspace differs from running the build directly:\n%s", d)
	}
	for _, c := range set.Changes {
		for _, e := range c.Before {
			if e.Type == "file" && e.SHA256 == "" && !c.ModeOnly {
				t.Errorf("kept %s has no hash", e.Path)
			}
		}
	}

	inv, err := Undo(set, s.keep, s.save)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffTrees(original, snapshotTree(t, s.ws)); d != "" {
		t.Fatalf("undo did not restore the workspace:\n%s", d)
	}
	redoKeep := filepath.Join(filepath.Dir(s.save), "redo")
	os.Mkdir(redoKeep, 0o700)
	if _, err := Undo(inv, s.save, redoKeep); err != nil {
		t.Fatal(err)
	}
	if d := diffTrees(oracle, snapshotTree(t, s.ws)); d != "" {
		t.Fatalf("undoing the undo did not redo the run:\n%s", d)
	}
}

// TestConflictRefused changes a file in the real workspace while the run
// has its own copy: the set must not be read as applicable, and Apply
// must refuse it too when the change comes after Read.
func TestConflictRefused(t *testing.T) {
	for _, when := range []string{"before-read", "before-apply"} {
		t.Run(when, func(t *testing.T) {
			s := newSetup(t)
			makeWorkspace(t, s.ws)
			start := time.Now()
			time.Sleep(20 * time.Millisecond)
			overlayRun(t, s.ws, s.upper, s.work, "echo run > a.txt")
			person := filepath.Join(s.ws, "a.txt")
			if when == "before-read" {
				os.WriteFile(person, []byte("the person's edit\n"), 0o644)
			}
			set, err := Read(s.upper, s.ws, start, Budget{})
			if when == "before-read" {
				if !errors.Is(err, ErrConflict) {
					t.Fatalf("Read: got %v, want a conflict", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(person, []byte("the person's edit\n"), 0o644)
			if err := Apply(&set, s.upper, s.keep); !errors.Is(err, ErrConflict) {
				t.Fatalf("Apply: got %v, want a conflict", err)
			}
			if b, _ := os.ReadFile(person); !bytes.Equal(b, []byte("the person's edit\n")) {
				t.Fatalf("the person's edit was clobbered: %q", b)
			}
		})
	}
}

// TestApplyAllOrNothing makes the second change fail and checks the
// first is moved back.
func TestApplyAllOrNothing(t *testing.T) {
	s := newSetup(t)
	makeWorkspace(t, s.ws)
	original := snapshotTree(t, s.ws)
	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	overlayRun(t, s.ws, s.upper, s.work, "echo 1 > a.txt; echo 2 > zz-new.txt")
	set, err := Read(s.upper, s.ws, start, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	// Something else creates zz-new.txt after the read.
	os.WriteFile(filepath.Join(s.ws, "zz-new.txt"), []byte("someone else\n"), 0o644)
	original["zz-new.txt"] = snapshotTree(t, s.ws)["zz-new.txt"]
	if err := Apply(&set, s.upper, s.keep); !errors.Is(err, ErrConflict) {
		t.Fatalf("got %v, want a conflict", err)
	}
	if d := diffTrees(original, snapshotTree(t, s.ws)); d != "" {
		t.Fatalf("a failed apply left changes:\n%s", d)
	}
}

// TestBudget refuses a run that changes more than the budget.
func TestBudget(t *testing.T) {
	s := newSetup(t)
	makeWorkspace(t, s.ws)
	start := time.Now()
	overlayRun(t, s.ws, s.upper, s.work, "rm -f big.bin")
	if _, err := Read(s.upper, s.ws, start, Budget{MaxBeforeBytes: 1 << 20}); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("bytes: got %v", err)
	}
	if _, err := Read(s.upper, s.ws, start, Budget{MaxEntries: 1}); err != nil {
		t.Fatalf("one entry within a budget of one: %v", err)
	}
	overlayRun(t, s.ws, s.upper, s.work, "touch n1 n2")
	if _, err := Read(s.upper, s.ws, start, Budget{MaxEntries: 2}); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("entries: got %v", err)
	}
}

// TestTamperedKeepRefused rewrites a kept file: undo must refuse before
// it touches the workspace.
func TestTamperedKeepRefused(t *testing.T) {
	s := newSetup(t)
	makeWorkspace(t, s.ws)
	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	overlayRun(t, s.ws, s.upper, s.work, "rm -rf tree; echo x > a.txt")
	set, err := Read(s.upper, s.ws, start, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(&set, s.upper, s.keep); err != nil {
		t.Fatal(err)
	}
	before := snapshotTree(t, s.ws)
	var i int
	for i = range set.Changes {
		if set.Changes[i].Path == "tree" {
			break
		}
	}
	os.WriteFile(filepath.Join(s.keep, keepName(i), "top.txt"), []byte("forged\n"), 0o644)
	if _, err := Undo(set, s.keep, s.save); !errors.Is(err, ErrTampered) {
		t.Fatalf("got %v, want tampered", err)
	}
	if d := diffTrees(before, snapshotTree(t, s.ws)); d != "" {
		t.Fatalf("a refused undo changed the workspace:\n%s", d)
	}
}

// TestUndoDoesNotFollowPlantedSymlink: after apply, the parent of a
// deleted path is replaced by a symlink out of the workspace; undo must
// not write through it.
func TestUndoDoesNotFollowPlantedSymlink(t *testing.T) {
	s := newSetup(t)
	makeWorkspace(t, s.ws)
	outside := filepath.Join(filepath.Dir(s.ws), "outside")
	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	overlayRun(t, s.ws, s.upper, s.work, "rm sub/keep")
	set, err := Read(s.upper, s.ws, start, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(&set, s.upper, s.keep); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(s.ws, "sub"))
	if err := os.Symlink(outside, filepath.Join(s.ws, "sub")); err != nil {
		t.Fatal(err)
	}
	_, err = Undo(set, s.keep, s.save)
	if !errors.Is(err, ErrUnsafe) {
		t.Fatalf("got %v, want unsafe", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("undo wrote outside the workspace: %v", ents)
	}
}
