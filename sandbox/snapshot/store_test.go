package snapshot

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fixture is a workspace, a directory outside it and a store, all on the
// real file system.
type fixture struct {
	ws, outside string
	store       *Store
}

func newFixture(t *testing.T, b Budget) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{f.ws, f.outside, filepath.Join(f.ws, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(filepath.Join(base, "state", "snapshots"), b)
	if err != nil {
		t.Fatal(err)
	}
	f.store = s
	return f
}

func (f fixture) write(t *testing.T, rel string, data []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(f.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func (f fixture) target(rel string) Target {
	return Target{Root: f.ws, Path: filepath.Join(f.ws, rel)}
}

func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

const testID = "0123456789abcdef01234567"

// TestTakeRestoreByteIdentical overwrites, deletes and creates files
// after a snapshot, and checks undo puts every byte and mode back and
// removes what the call created.
func TestTakeRestoreByteIdentical(t *testing.T) {
	f := newFixture(t, Budget{})
	big := randomBytes(t, 3<<20+17)
	small := []byte("package main\n")
	f.write(t, "big.bin", big, 0o644)
	f.write(t, "sub/main.go", small, 0o755)
	f.write(t, "empty", nil, 0o600)

	snap, err := f.store.Take(testID, []Target{f.target("big.bin"), f.target("sub/main.go"), f.target("empty"), f.target("new.txt")})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) != 4 || !snap.Files[0].Exists || snap.Files[3].Exists {
		t.Fatalf("snapshot files = %+v", snap.Files)
	}
	if snap.Bytes() != int64(len(big)+len(small)) {
		t.Errorf("Bytes = %d, want %d", snap.Bytes(), len(big)+len(small))
	}

	// What the call does: overwrite, delete, chmod, create.
	f.write(t, "big.bin", []byte("overwritten"), 0o644)
	if err := os.Remove(filepath.Join(f.ws, "sub/main.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(f.ws, "empty"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.write(t, "new.txt", []byte("created"), 0o644)

	rep, err := f.store.Restore(testID, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rel  string
		data []byte
		mode os.FileMode
	}{{"big.bin", big, 0o644}, {"sub/main.go", small, 0o755}, {"empty", nil, 0o600}} {
		got, err := os.ReadFile(filepath.Join(f.ws, c.rel))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, c.data) {
			t.Errorf("%s: restored %d bytes, not the original %d", c.rel, len(got), len(c.data))
		}
		fi, _ := os.Stat(filepath.Join(f.ws, c.rel))
		if fi.Mode().Perm() != c.mode {
			t.Errorf("%s: mode %v, want %v", c.rel, fi.Mode().Perm(), c.mode)
		}
	}
	if _, err := os.Lstat(filepath.Join(f.ws, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new.txt still exists after undo: %v", err)
	}
	actions := map[string]string{}
	for _, r := range rep.Files {
		actions[filepath.Base(r.Path)] = r.Action
	}
	want := map[string]string{"big.bin": "restored", "main.go": "restored", "empty": "restored", "new.txt": "removed"}
	for k, v := range want {
		if actions[k] != v {
			t.Errorf("action for %s = %q, want %q (report %+v)", k, actions[k], v, rep.Files)
		}
	}

	// The undo preserved what it overwrote: undoing the undo brings the
	// call's result back.
	if rep.Saved == "" {
		t.Fatal("undo preserved nothing of what it overwrote")
	}
	if _, err := f.store.Restore(rep.Saved, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.ws, "big.bin")); string(got) != "overwritten" {
		t.Errorf("undo of the undo: big.bin = %q", got)
	}
}

// TestTakeRefuses lists what must never be snapshotted as if it were a
// workspace file: each refusal means no evidence.
func TestTakeRefuses(t *testing.T) {
	tests := []struct {
		name   string
		budget Budget
		setup  func(t *testing.T, f fixture) []Target
		want   error
	}{
		{"symlink to outside", Budget{}, func(t *testing.T, f fixture) []Target {
			os.WriteFile(filepath.Join(f.outside, "secret"), []byte("s"), 0o600)
			os.Symlink(filepath.Join(f.outside, "secret"), filepath.Join(f.ws, "link"))
			return []Target{f.target("link")}
		}, ErrUnsafe},
		{"symlink inside the workspace", Budget{}, func(t *testing.T, f fixture) []Target {
			f.write(t, "real", []byte("r"), 0o644)
			os.Symlink("real", filepath.Join(f.ws, "link"))
			return []Target{f.target("link")}
		}, ErrUnsafe},
		{"dangling symlink", Budget{}, func(t *testing.T, f fixture) []Target {
			os.Symlink(filepath.Join(f.outside, "nothing"), filepath.Join(f.ws, "link"))
			return []Target{f.target("link")}
		}, ErrUnsafe},
		{"symlinked directory on the way", Budget{}, func(t *testing.T, f fixture) []Target {
			os.WriteFile(filepath.Join(f.outside, "x"), []byte("x"), 0o600)
			os.Symlink(f.outside, filepath.Join(f.ws, "dir"))
			return []Target{f.target("dir/x")}
		}, ErrUnsafe},
		{"new file under a symlinked directory", Budget{}, func(t *testing.T, f fixture) []Target {
			os.Symlink(f.outside, filepath.Join(f.ws, "dir"))
			return []Target{f.target("dir/new")}
		}, ErrUnsafe},
		{"hard link to a file outside", Budget{}, func(t *testing.T, f fixture) []Target {
			out := filepath.Join(f.outside, "secret")
			os.WriteFile(out, []byte("s"), 0o600)
			if err := os.Link(out, filepath.Join(f.ws, "hard")); err != nil {
				t.Fatal(err)
			}
			return []Target{f.target("hard")}
		}, ErrUnsafe},
		{"directory", Budget{}, func(t *testing.T, f fixture) []Target {
			return []Target{f.target("sub")}
		}, ErrUnsafe},
		{"fifo", Budget{}, func(t *testing.T, f fixture) []Target {
			if err := syscall.Mkfifo(filepath.Join(f.ws, "fifo"), 0o600); err != nil {
				t.Fatal(err)
			}
			return []Target{f.target("fifo")}
		}, ErrUnsafe},
		{"absent path a tree may land on", Budget{}, func(t *testing.T, f fixture) []Target {
			return []Target{{Root: f.ws, Path: filepath.Join(f.ws, "out"), Recursive: true}}
		}, ErrUnsafe},
		{"path outside the root", Budget{}, func(t *testing.T, f fixture) []Target {
			os.WriteFile(filepath.Join(f.outside, "x"), []byte("x"), 0o600)
			return []Target{{Root: f.ws, Path: filepath.Join(f.outside, "x")}}
		}, ErrUnsafe},
		{"the file system root as workspace", Budget{}, func(t *testing.T, f fixture) []Target {
			f.write(t, "a", []byte("a"), 0o644)
			return []Target{{Root: "/", Path: filepath.Join(f.ws, "a")}}
		}, ErrUnsafe},
		{"the root itself", Budget{}, func(t *testing.T, f fixture) []Target {
			return []Target{{Root: f.ws, Path: f.ws}}
		}, ErrUnsafe},
		{"file over the file budget", Budget{MaxFileBytes: 10}, func(t *testing.T, f fixture) []Target {
			f.write(t, "a", make([]byte, 11), 0o644)
			return []Target{f.target("a")}
		}, ErrOverBudget},
		{"files over the call budget", Budget{MaxCallBytes: 15}, func(t *testing.T, f fixture) []Target {
			f.write(t, "a", make([]byte, 10), 0o644)
			f.write(t, "b", make([]byte, 10), 0o644)
			return []Target{f.target("a"), f.target("b")}
		}, ErrOverBudget},
		{"too many files", Budget{MaxFiles: 2}, func(t *testing.T, f fixture) []Target {
			return []Target{f.target("a"), f.target("b"), f.target("c")}
		}, ErrOverBudget},
		{"store full", Budget{MaxStoreBytes: 5}, func(t *testing.T, f fixture) []Target {
			f.write(t, "a", make([]byte, 6), 0o644)
			return []Target{f.target("a")}
		}, ErrOverBudget},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.budget)
			targets := tc.setup(t, f)
			_, err := f.store.Take(testID, targets)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Take = %v, want %v", err, tc.want)
			}
			if _, err := f.store.Get(testID); !errors.Is(err, ErrNotFound) {
				t.Errorf("a refused snapshot is listed: %v", err)
			}
		})
	}
}

func TestBadIDs(t *testing.T) {
	f := newFixture(t, Budget{})
	for _, id := range []string{"", "../../etc/passwd", "0123456789ABCDEF", "0123", "0123456789abcdef/x", "0123456789abcdefg"} {
		if _, err := f.store.Take(id, []Target{f.target("a")}); !errors.Is(err, ErrBadID) {
			t.Errorf("Take(%q) = %v, want ErrBadID", id, err)
		}
		if _, err := f.store.Restore(id, false); !errors.Is(err, ErrBadID) {
			t.Errorf("Restore(%q) = %v, want ErrBadID", id, err)
		}
	}
}

// TestRestoreSymlinkSwappedAfterCheck: after the check the file is
// replaced by a symlink to a file outside (the write then lands outside).
// Undo must not write through the link: it replaces the link with the
// preserved file and leaves the outside file as it is.
func TestRestoreSymlinkSwappedAfterCheck(t *testing.T) {
	f := newFixture(t, Budget{})
	f.write(t, "config.yaml", []byte("original\n"), 0o644)
	if _, err := f.store.Take(testID, []Target{f.target("config.yaml")}); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(f.outside, "authorized_keys")
	if err := os.WriteFile(secret, []byte("ssh-ed25519 attacker\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(f.ws, "config.yaml")
	os.Remove(p)
	if err := os.Symlink(secret, p); err != nil {
		t.Fatal(err)
	}
	rep, err := f.store.Restore(testID, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(secret); string(got) != "ssh-ed25519 attacker\n" {
		t.Errorf("undo wrote through the symlink: outside file = %q", got)
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("config.yaml after undo: %v %v", fi, err)
	}
	if got, _ := os.ReadFile(p); string(got) != "original\n" {
		t.Errorf("config.yaml = %q", got)
	}
	if len(rep.Files) != 1 || rep.Files[0].Was != "symlink to "+secret {
		t.Errorf("report does not say it replaced the symlink: %+v", rep.Files)
	}
}

// TestRestoreParentSwappedToSymlink: the file's directory is replaced by
// a symlink to a directory outside. Undo refuses that path and writes
// nothing outside.
func TestRestoreParentSwappedToSymlink(t *testing.T) {
	f := newFixture(t, Budget{})
	f.write(t, "sub/a.txt", []byte("a"), 0o644)
	if _, err := f.store.Take(testID, []Target{f.target("sub/a.txt")}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(f.ws, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.outside, filepath.Join(f.ws, "sub")); err != nil {
		t.Fatal(err)
	}
	_, err := f.store.Restore(testID, false)
	if !errors.Is(err, ErrUnsafe) {
		t.Fatalf("Restore = %v, want ErrUnsafe", err)
	}
	if _, err := os.Lstat(filepath.Join(f.outside, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("undo created a file outside the workspace: %v", err)
	}
}

// TestRestoreRefusesTampered: a stored copy rewritten by the same uid is
// caught by its hash before anything in the workspace changes.
func TestRestoreRefusesTampered(t *testing.T) {
	f := newFixture(t, Budget{})
	f.write(t, "a.txt", []byte("original"), 0o644)
	snap, err := f.store.Take(testID, []Target{f.target("a.txt")})
	if err != nil {
		t.Fatal(err)
	}
	f.write(t, "a.txt", []byte("after the call"), 0o644)
	obj := f.store.objectPath(snap.Files[0].SHA256)
	os.Chmod(obj, 0o600)
	if err := os.WriteFile(obj, []byte("evil!!!!"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Restore(testID, false); !errors.Is(err, ErrTampered) {
		t.Fatalf("Restore = %v, want ErrTampered", err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.ws, "a.txt")); string(got) != "after the call" {
		t.Errorf("workspace changed by a refused undo: %q", got)
	}
}

// TestRestoreHardLinkNow: when the file has gained a hard link since, its
// content cannot be preserved before undo overwrites it, so undo refuses
// unless forced; forced, it replaces this name only.
func TestRestoreHardLinkNow(t *testing.T) {
	f := newFixture(t, Budget{})
	p := f.write(t, "a.txt", []byte("original"), 0o644)
	if _, err := f.store.Take(testID, []Target{f.target("a.txt")}); err != nil {
		t.Fatal(err)
	}
	f.write(t, "a.txt", []byte("changed"), 0o644)
	other := filepath.Join(f.outside, "other")
	if err := os.Link(p, other); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Restore(testID, false); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("Restore = %v, want ErrUnsafe", err)
	}
	if _, err := f.store.Restore(testID, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "original" {
		t.Errorf("a.txt = %q", got)
	}
	if got, _ := os.ReadFile(other); string(got) != "changed" {
		t.Errorf("the other name was written through: %q", got)
	}
}

func TestDedupAndList(t *testing.T) {
	f := newFixture(t, Budget{})
	f.write(t, "a", []byte("same"), 0o644)
	f.write(t, "b", []byte("same"), 0o644)
	ids := []string{"00000000000000000000000a", "00000000000000000000000b"}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range ids {
		f.store.now = func() time.Time { return now.Add(time.Duration(i) * time.Hour) }
		if _, err := f.store.Take(id, []Target{f.target("a"), f.target("b")}); err != nil {
			t.Fatal(err)
		}
	}
	used, err := f.store.Usage()
	if err != nil || used != 4 {
		t.Errorf("usage = %d %v, want 4 (one object for identical bytes)", used, err)
	}
	list, err := f.store.List()
	if err != nil || len(list) != 2 || list[0].ID != ids[0] || list[1].ID != ids[1] {
		t.Fatalf("List = %+v %v", list, err)
	}
}

func TestPrune(t *testing.T) {
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		olderThan time.Duration
		maxBytes  int64
		wantLeft  []string
	}{
		{"older than a day and a half", 36 * time.Hour, 0, []string{"000000000000000000000003"}},
		{"at most 150 bytes", 0, 150, []string{"000000000000000000000002", "000000000000000000000003"}},
		{"at most 10 bytes", 0, 10, nil},
		{"nothing asked", 0, 0, []string{"000000000000000000000001", "000000000000000000000002", "000000000000000000000003"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Budget{})
			for i, id := range []string{"000000000000000000000001", "000000000000000000000002", "000000000000000000000003"} {
				f.write(t, "a", bytes.Repeat([]byte{byte('a' + i)}, 70), 0o644)
				f.store.now = func() time.Time { return now.Add(-time.Duration(3-i) * 24 * time.Hour) }
				if _, err := f.store.Take(id, []Target{f.target("a")}); err != nil {
					t.Fatal(err)
				}
			}
			f.store.now = func() time.Time { return now }
			rep, err := f.store.Prune(tc.olderThan, tc.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			list, _ := f.store.List()
			var left []string
			for _, s := range list {
				left = append(left, s.ID)
			}
			if !equal(left, tc.wantLeft) {
				t.Errorf("left %v, want %v", left, tc.wantLeft)
			}
			if rep.Left != int64(70*len(tc.wantLeft)) || rep.Freed != int64(70*(3-len(tc.wantLeft))) {
				t.Errorf("report %+v", rep)
			}
			// Every kept snapshot still restores.
			for _, id := range left {
				if _, err := f.store.Restore(id, true); err != nil {
					t.Errorf("restore %s after prune: %v", id, err)
				}
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestConcurrentTakes runs takes beside prunes: every snapshot that was
// taken must still restore (prune never collects an object a snapshot
// names).
func TestConcurrentTakes(t *testing.T) {
	f := newFixture(t, Budget{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel := filepath.Join("sub", string(rune('a'+i)))
			f.write(t, rel, bytes.Repeat([]byte{byte(i)}, 1000+i), 0o644)
			id := NewID()
			if _, err := f.store.Take(id, []Target{f.target(rel)}); err != nil {
				errs <- err
				return
			}
			if _, err := f.store.Prune(0, 0); err != nil {
				errs <- err
				return
			}
			if _, err := f.store.Restore(id, false); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRestoreRecreatesDirectories: the call removed the file's whole
// directory; undo makes the directories again beneath the root.
func TestRestoreRecreatesDirectories(t *testing.T) {
	f := newFixture(t, Budget{})
	f.write(t, "a/b/c.txt", []byte("deep"), 0o640)
	if _, err := f.store.Take(testID, []Target{f.target("a/b/c.txt")}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(f.ws, "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Restore(testID, false); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(f.ws, "a/b/c.txt"))
	if err != nil || string(got) != "deep" {
		t.Errorf("a/b/c.txt = %q, %v", got, err)
	}
}

// TestDirSyncShares: callers that arrive while a directory fsync runs
// share the next one; each caller's fsync begins after it arrived; a
// failure reaches the callers it covers.
func TestDirSyncShares(t *testing.T) {
	dir := t.TempDir()
	var d dirSync
	const callers = 64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			if err := d.sync(dir); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if d.begun == 0 || d.begun > callers || d.ok != d.begun {
		t.Fatalf("%d callers: %d fsyncs begun, %d ok", callers, d.begun, d.ok)
	}
	t.Logf("%d callers shared %d fsyncs", callers, d.begun)

	// Each call needs an fsync of its own time: one after another, each
	// begins one.
	before := d.begun
	for range 3 {
		if err := d.sync(dir); err != nil {
			t.Fatal(err)
		}
	}
	if d.begun != before+3 {
		t.Fatalf("3 calls in turn began %d fsyncs, want 3", d.begun-before)
	}

	// A directory that cannot be opened fails the caller, and a later
	// success does not clear that caller's failure.
	if err := d.sync(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("fsync of a missing directory succeeded")
	}
	if err := d.sync(dir); err != nil {
		t.Fatalf("after a failure, a new fsync: %v", err)
	}
}

// TestDirSyncWaitsForTheNext: a caller that arrives while an fsync runs
// is not answered by it (it may have begun before the caller's rename),
// but by the next.
func TestDirSyncWaitsForTheNext(t *testing.T) {
	entered, release := make(chan int, 4), make(chan struct{})
	n := 0
	d := dirSync{fsync: func(string) error {
		n++ // under the running flag: one at a time
		entered <- n
		<-release
		return nil
	}}
	first := make(chan error, 1)
	go func() { first <- d.sync("x") }()
	if got := <-entered; got != 1 {
		t.Fatalf("fsync %d entered, want 1", got)
	}
	// The second caller comes after the first fsync began, whether it
	// reaches sync before or after that fsync ends.
	second := make(chan error, 1)
	go func() { second <- d.sync("x") }()
	release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-second:
		t.Fatalf("the second caller returned (%v) on an fsync that began before it", err)
	case got := <-entered:
		if got != 2 {
			t.Fatalf("fsync %d entered, want 2", got)
		}
	}
	release <- struct{}{}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
}

// TestOpenSweepsLeftovers: temporary index files a killed process left
// are removed when the store is opened; young ones, which may be a take
// in progress elsewhere, stay.
func TestOpenSweepsLeftovers(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir, Budget{}); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "index", ".incoming-1")
	young := filepath.Join(dir, "index", ".incoming-2")
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Budget{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("old leftover still there: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("young temporary file removed: %v", err)
	}
}
