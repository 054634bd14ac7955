package changes

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// genBuild writes a random build of n shell steps over a small set of
// names, each step allowed to fail (as it fails in both runs alike):
// deletes of files and trees, creates, rewrites, appends, renames of
// files and trees, copies, chmods, symlinks (some out of the workspace)
// and fifos. A tree is never moved or copied into itself.
func genBuild(r *rand.Rand, n int) string {
	names := []string{"a.txt", "b.txt", "tree", "tree/x", "tree/x/y.go", "tree/top.txt", "dir1", "dir1/inner.txt",
		"sub", "sub/file", "sub/keep", "new", "new/n1", "n2", "script.sh", "node_modules", "node_modules/m"}
	pick := func() string { return names[r.IntN(len(names))] }
	var b strings.Builder
	for i := 0; i < n; i++ {
		p, q := pick(), pick()
		for q == p || strings.HasPrefix(q, p+"/") {
			// Moving or copying a tree into itself: GNU mv and cp decide
			// by inode numbers, which overlayfs does not keep stable for
			// directories, so the two runs would differ before narrowd
			// is involved.
			q = pick()
		}
		switch r.IntN(11) {
		case 0:
			fmt.Fprintf(&b, "rm -rf %s\n", p)
		case 1:
			fmt.Fprintf(&b, "mkdir -p %s\n", p)
		case 2:
			fmt.Fprintf(&b, "echo step%d > %s\n", i, p)
		case 3:
			fmt.Fprintf(&b, "printf more%d >> %s\n", i, p)
		case 4:
			fmt.Fprintf(&b, "mv %s %s\n", p, q)
		case 5:
			fmt.Fprintf(&b, "cp -r %s %s\n", p, q)
		case 6:
			fmt.Fprintf(&b, "chmod %s %s\n", []string{"700", "644", "755", "600"}[r.IntN(4)], p)
		case 7:
			fmt.Fprintf(&b, "ln -s %s %s\n", []string{"/etc/passwd", "../outside", "a.txt", q}[r.IntN(4)], p)
		case 8:
			fmt.Fprintf(&b, "mkfifo %s\n", p)
		case 9:
			fmt.Fprintf(&b, "rm -f %s\n", p)
		case 10:
			fmt.Fprintf(&b, "rm -rf %s && mkdir -p %s && echo fresh%d > %s/f\n", p, p, i, p)
		}
	}
	b.WriteString("true\n")
	return b.String()
}

// TestGeneratedBuilds runs random builds in a real overlay and directly:
// after Apply the workspace must be what the direct run left, after Undo
// what it was, and undoing the undo must redo the run.
func TestGeneratedBuilds(t *testing.T) {
	seeds := 25
	if testing.Short() {
		seeds = 5
	}
	for seed := 0; seed < seeds; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 16))
		build := genBuild(r, 4+r.IntN(12))
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := newSetup(t)
			makeWorkspace(t, s.ws)
			os.Remove(filepath.Join(s.ws, "big.bin")) // keep each case small
			original := snapshotTree(t, s.ws)
			oracle := snapshotTree(t, directRun(t, s.ws, build))
			start := time.Now()
			time.Sleep(10 * time.Millisecond)
			overlayRun(t, s.ws, s.upper, s.work, build)
			set, err := Read(s.upper, s.ws, start, Budget{})
			if err != nil {
				t.Fatalf("read: %v\nbuild:\n%s", err, build)
			}
			if err := Apply(&set, s.upper, s.keep); err != nil {
				t.Fatalf("apply: %v\nbuild:\n%s", err, build)
			}
			if d := diffTrees(oracle, snapshotTree(t, s.ws)); d != "" {
				t.Fatalf("applied workspace differs from the direct run:\n%s\nbuild:\n%s", d, build)
			}
			inv, err := Undo(set, s.keep, s.save)
			if err != nil {
				t.Fatalf("undo: %v\nbuild:\n%s", err, build)
			}
			if d := diffTrees(original, snapshotTree(t, s.ws)); d != "" {
				t.Fatalf("undo did not restore:\n%s\nbuild:\n%s", d, build)
			}
			redo := filepath.Join(filepath.Dir(s.save), "redo")
			os.Mkdir(redo, 0o700)
			if _, err := Undo(inv, s.save, redo); err != nil {
				t.Fatalf("redo: %v\nbuild:\n%s", err, build)
			}
			if d := diffTrees(oracle, snapshotTree(t, s.ws)); d != "" {
				t.Fatalf("redo differs from the direct run:\n%s\nbuild:\n%s", d, build)
			}
		})
	}
}
