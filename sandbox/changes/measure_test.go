package changes

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMeasureUndo prints what each undo design costs (issue 16 item 2);
// it asserts nothing about time. .ci/bench-undo.sh runs it:
//
//	NARROWD_MEASURE_UNDO=1 go test -run TestMeasureUndo -v ./sandbox/changes/
//
// (A) overlay: the run writes an overlay's upper layer; afterwards Read
// and Apply move its changes in, keeping the originals. (B) copies before
// the run: the whole writable tree is cloned (FICLONE, else copied) into
// the store before the run, and compared with the tree after it.
func TestMeasureUndo(t *testing.T) {
	if os.Getenv("NARROWD_MEASURE_UNDO") == "" {
		t.Skip("SKIPPING: set NARROWD_MEASURE_UNDO=1 (.ci/bench-undo.sh)")
	}
	runs, _ := strconv.Atoi(os.Getenv("RUNS"))
	if runs <= 0 {
		runs = 5
	}
	base := os.Getenv("BENCH_DIR")
	if base == "" {
		base = t.TempDir()
	}
	trees := []struct {
		name  string
		files int
		size  int // mean file size
	}{
		{"small repo", 200, 10 << 10},
		{"go test-sized", 3000, 14 << 10},
		{"npm test-sized", 30000, 8 << 10},
	}
	fmt.Printf("medians of %d runs; %s\n", runs, fsInfo(base))
	fmt.Printf("%-15s %6s %6s | %-52s | %-34s\n", "", "", "", "A overlay", "B copy before the run")
	fmt.Printf("%-15s %6s %6s | %8s %8s %8s %8s %8s | %9s %9s %8s\n", "tree", "files", "MiB",
		"mount", "read0", "build+", "apply16", "undo16", "clone", "compare", "undo16")
	for _, tr := range trees {
		dir := filepath.Join(base, strings.ReplaceAll(tr.name, " ", "-"))
		ws := filepath.Join(dir, "ws")
		bytes := makeTree(t, ws, tr.files, tr.size)
		a := measureOverlay(t, dir, ws, runs)
		b := measureCopy(t, dir, ws, runs)
		fmt.Printf("%-15s %6d %6.1f | %8s %8s %8s %8s %8s | %9s %9s %8s\n", tr.name, tr.files, float64(bytes)/(1<<20),
			ms(a.mount), ms(a.read0), ms(a.build), ms(a.apply), ms(a.undo), ms(b.clone), ms(b.compare), ms(b.undo))
		os.RemoveAll(dir)
	}
	fmt.Println("A mount:   the mount(2) and umount(2) of the overlay in a user and mount namespace (what the sandbox's net stage adds)")
	fmt.Println("A read0:   Read + Apply after a run that changed nothing (the upper layer is empty: independent of the tree)")
	fmt.Println("A build+:  the 16 MiB build run in the overlay, minus the same build run directly (copy-up, whiteouts)")
	fmt.Println("A apply16: Read + Apply of that build: originals moved into the store (one rename per changed path) and hashed")
	fmt.Println("B clone:   cp -a --reflink=auto of the whole tree into the store before every run")
	fmt.Println("B compare: lstat walk of tree and copy after the run")
	fmt.Println("undo16:    putting the 16 MiB build's originals back (A: Verify + Undo; B: copy the changed paths back)")
	fmt.Println("the 16 MiB build creates 8 MiB in new files, rewrites 4 MiB of files and deletes a 4 MiB tree")
}

type overlayCost struct{ mount, read0, build, apply, undo time.Duration }

type copyCost struct{ clone, compare, undo time.Duration }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func fsInfo(dir string) string {
	out, _ := exec.Command("stat", "-f", "-c", "file system %T", dir).Output()
	return strings.TrimSpace(string(out))
}

// makeTree writes files files of about size bytes each, in directories
// of 20 files, 3 levels deep, and returns the bytes written.
func makeTree(t *testing.T, dir string, files, size int) int64 {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4*size)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	var total int64
	for i := 0; i < files; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%d/e%d/f%d/file%d.txt", i/4000, i/400, i/20, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		n := 1 + r.IntN(2*size)
		if err := os.WriteFile(p, buf[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		total += int64(n)
	}
	big := make([]byte, 4<<20)
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	for _, p := range []string{"rewrite/a.bin", "rewrite/b.bin", "deleted/x/1.bin", "deleted/x/2.bin", "deleted/y/3.bin", "deleted/y/4.bin"} {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, big[:2<<20], 0o644)
		total += 2 << 20
	}
	return total
}

// changeBuild creates 8 MiB in new files, rewrites 4 MiB of files and
// deletes a 4 MiB tree.
const changeBuild = `set -e
mkdir -p out
head -c 4194304 /dev/zero > out/one.o
head -c 4194304 /dev/zero > out/two.o
for f in rewrite/a.bin rewrite/b.bin; do head -c 2097152 /dev/zero > "$f"; done
rm -rf deleted
`

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func timeIt(f func()) time.Duration {
	t0 := time.Now()
	f()
	return time.Since(t0)
}

func mustRun(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	c := exec.Command(name, args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
}

func measureOverlay(t *testing.T, dir, ws string, runs int) overlayCost {
	var bare, mounted []time.Duration
	var read0, overlayBuild, directBuild, apply, undo []time.Duration
	state := filepath.Join(dir, "state")
	fresh := func() (upper, work, keep, save string) {
		os.RemoveAll(state)
		upper, work, keep, save = filepath.Join(state, "u"), filepath.Join(state, "w"), filepath.Join(state, "k"), filepath.Join(state, "s")
		for _, d := range []string{upper, work, keep, save} {
			os.MkdirAll(d, 0o700)
		}
		return
	}
	merged := filepath.Join(dir, "merged")
	os.MkdirAll(merged, 0o755)
	inOverlay := func(upper, work, script string) string {
		return fmt.Sprintf("mount -t overlay overlay -o userxattr,lowerdir=%s,upperdir=%s,workdir=%s %s && cd %s && sh -c '%s'", ws, upper, work, merged, merged, script)
	}
	for i := 0; i < runs; i++ {
		upper, work, keep, save := fresh()
		mustRun(t, ws, "unshare", "-rm", "sh", "-c", inOverlay(upper, work, "true"))
		read0 = append(read0, timeIt(func() {
			set, err := Read(upper, ws, time.Now(), Budget{})
			if err != nil {
				t.Fatal(err)
			}
			if err := Apply(&set, upper, keep); err != nil {
				t.Fatal(err)
			}
		}))

		upper, work, keep, save = fresh()
		scratch := filepath.Join(dir, "direct")
		os.RemoveAll(scratch)
		mustRun(t, dir, "cp", "-a", "--reflink=auto", ws, scratch)
		directBuild = append(directBuild, timeIt(func() { mustRun(t, scratch, "unshare", "-rm", "sh", "-c", "cd "+scratch+" && sh -c '"+changeBuild+"'") }))
		os.RemoveAll(scratch)
		start := time.Now()
		overlayBuild = append(overlayBuild, timeIt(func() { mustRun(t, ws, "unshare", "-rm", "sh", "-c", inOverlay(upper, work, changeBuild)) }))
		var set Set
		apply = append(apply, timeIt(func() {
			var err error
			if set, err = Read(upper, ws, start, Budget{}); err != nil {
				t.Fatal(err)
			}
			if err := Apply(&set, upper, keep); err != nil {
				t.Fatal(err)
			}
		}))
		undo = append(undo, timeIt(func() {
			if _, err := Undo(set, keep, save); err != nil {
				t.Fatal(err)
			}
		}))
	}
	os.RemoveAll(state)
	_, _ = bare, mounted
	return overlayCost{mount: mountSyscall(t, dir, ws, 21), read0: median(read0), build: median(overlayBuild) - median(directBuild),
		apply: median(apply), undo: median(undo)}
}

// measureCopy is design B: clone the tree into the store before the run,
// run directly, compare after; undo copies the changed paths back.
func measureCopy(t *testing.T, dir, ws string, runs int) copyCost {
	var clone, compare, undo []time.Duration
	store := filepath.Join(dir, "store")
	for i := 0; i < runs; i++ {
		os.RemoveAll(store)
		os.MkdirAll(store, 0o700)
		copyDir := filepath.Join(store, "copy")
		clone = append(clone, timeIt(func() { mustRun(t, dir, "cp", "-a", "--reflink=auto", ws, copyDir) }))
		mustRun(t, ws, "sh", "-c", changeBuild)
		var changed int
		compare = append(compare, timeIt(func() { changed = statDiff(t, copyDir, ws) }))
		if changed == 0 {
			t.Fatal("the comparison found no change")
		}
		undo = append(undo, timeIt(func() {
			os.RemoveAll(filepath.Join(ws, "out"))
			for _, p := range []string{"rewrite", "deleted"} {
				os.RemoveAll(filepath.Join(ws, p))
				mustRun(t, dir, "cp", "-a", "--reflink=auto", filepath.Join(copyDir, p), filepath.Join(ws, p))
			}
		}))
	}
	os.RemoveAll(store)
	return copyCost{clone: median(clone), compare: median(compare), undo: median(undo)}
}

// statDiff is B's comparison: the paths whose type, mode, size or mtime
// differ between the copy (cp -a keeps mtimes) and the tree, or that
// only one has; a directory's size and mtime do not count.
func statDiff(t *testing.T, a, b string) int {
	t.Helper()
	list := func(root string) map[string][3]int64 {
		m := map[string][3]int64{}
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			fi, err := d.Info()
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, p)
			size := fi.Size()
			mtime := fi.ModTime().UnixNano()
			if fi.IsDir() {
				size, mtime = 0, 0
			}
			m[rel] = [3]int64{int64(fi.Mode()), size, mtime}
			return nil
		})
		return m
	}
	x, y := list(a), list(b)
	n := 0
	for p, v := range x {
		if w, ok := y[p]; !ok || w != v {
			n++
		}
	}
	for p := range y {
		if _, ok := x[p]; !ok {
			n++
		}
	}
	return n
}

// mountSyscall times mount(2) of the overlay (and its umount) in a user
// and mount namespace: this test binary, re-run under unshare -rm as
// TestMeasureMountHelper.
func mountSyscall(t *testing.T, dir, ws string, n int) time.Duration {
	upper, work, target := filepath.Join(dir, "mu"), filepath.Join(dir, "mw"), filepath.Join(dir, "mt")
	for _, d := range []string{upper, work, target} {
		os.MkdirAll(d, 0o700)
	}
	defer func() {
		for _, d := range []string{upper, work, target} {
			RemoveAll(d)
		}
	}()
	c := exec.Command("unshare", "-rm", os.Args[0], "-test.run=^TestMeasureMountHelper$")
	c.Env = append(os.Environ(), "NARROWD_MOUNT_HELPER="+strings.Join([]string{ws, upper, work, target, strconv.Itoa(n)}, "|"))
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("mount helper: %v: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "MOUNT_NS="); ok {
			ns, _ := strconv.ParseInt(v, 10, 64)
			return time.Duration(ns)
		}
	}
	t.Fatalf("mount helper said: %s", out)
	return 0
}

func TestMeasureMountHelper(t *testing.T) {
	env := os.Getenv("NARROWD_MOUNT_HELPER")
	if env == "" {
		t.Skip("SKIPPING: run by TestMeasureUndo")
	}
	p := strings.Split(env, "|")
	n, _ := strconv.Atoi(p[4])
	opts := "lowerdir=" + p[0] + ",upperdir=" + p[1] + ",workdir=" + p[2] + ",userxattr"
	var ds []time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if err := unix.Mount("overlay", p[3], "overlay", 0, opts); err != nil {
			t.Fatal(err)
		}
		if err := unix.Unmount(p[3], 0); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	fmt.Printf("MOUNT_NS=%d\n", median(ds))
}
