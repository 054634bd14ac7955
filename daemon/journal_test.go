package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestJournalLingerSharesOneFsync: while more appends are announced as
// coming than a batch holds, the writer waits for them (here without a
// time limit that matters) and writes them as one batch; an append with
// none other coming does not wait.
func TestJournalLingerSharesOneFsync(t *testing.T) {
	for _, n := range []int{1, 2, 5, 40} {
		t.Run("", func(t *testing.T) {
			var batches atomic.Int64
			var coming atomic.Int64
			// limit 1: full is called before every batch but the
			// first, so it counts batches; it keeps the same file.
			j, err := openJournal(filepath.Join(t.TempDir(), "j"), journalOptions{
				limit: 1,
				full: func(f *os.File, size int64) (*os.File, int64, error) {
					batches.Add(1)
					return f, size, nil
				},
				coming: &coming,
				linger: time.Hour,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if err := j.Append([]byte("seed\n")); err != nil {
				t.Fatal(err)
			}
			coming.Store(int64(n))
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					if err := j.Append([]byte("line\n")); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if got := batches.Load(); got != 1 {
				t.Errorf("%d appends announced and made: %d batches, want 1", n, got)
			}
		})
	}
}

// TestJournalCloseEndsLinger: closing the journal while its writer waits
// for announced appends writes what it holds and stops.
func TestJournalCloseEndsLinger(t *testing.T) {
	var coming atomic.Int64
	coming.Store(2)
	path := filepath.Join(t.TempDir(), "j")
	j, err := openJournal(path, journalOptions{coming: &coming, linger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- j.Append([]byte("one\n")) }()
	// Whether the writer took "one" (and lingers for the second) or
	// Close came first, neither Close nor the append may hang.
	j.Close()
	if err := <-errc; err != nil && err != errClosed {
		t.Fatalf("append during close: %v", err)
	}
}

// syncCounter is a journal's sync that counts its calls and can fail
// them.
type syncCounter struct {
	mu    sync.Mutex
	calls int
	fail  error
	// sizes records each synced file's name and size at the time.
	sizes map[string][]int64
}

func (c *syncCounter) sync(f *os.File) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.sizes == nil {
		c.sizes = make(map[string][]int64)
	}
	if fi, err := f.Stat(); err == nil {
		c.sizes[f.Name()] = append(c.sizes[f.Name()], fi.Size())
	}
	if err := c.fail; err != nil {
		c.fail = nil
		return err
	}
	return f.Sync()
}

func (c *syncCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// TestJournalSyncsBeforeAck: without syncWithin, an append returns only
// after its line was fsynced.
func TestJournalSyncsBeforeAck(t *testing.T) {
	var c syncCounter
	j, err := openJournal(filepath.Join(t.TempDir(), "j"), journalOptions{sync: c.sync})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i := 1; i <= 3; i++ {
		if err := j.Append([]byte("line\n")); err != nil {
			t.Fatal(err)
		}
		if got := c.count(); got != i {
			t.Fatalf("after append %d: %d fsyncs", i, got)
		}
	}
}

// TestJournalSyncWithin: with syncWithin, an append returns once its line
// is in the file; the syncer fsyncs at once when idle, then not again
// until syncWithin has passed however many lines come; Close fsyncs the
// rest.
func TestJournalSyncWithin(t *testing.T) {
	var c syncCounter
	path := filepath.Join(t.TempDir(), "j")
	j, err := openJournal(path, journalOptions{sync: c.sync, syncWithin: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append([]byte("first\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "first\n" {
		t.Fatalf("acknowledged line not in the file: %q", b)
	}
	waitFor(t, func() bool { return c.count() == 1 })
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := j.Append([]byte("more\n")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if b, _ := os.ReadFile(path); len(b) != len("first\n")+50*len("more\n") {
		t.Fatalf("acknowledged lines not in the file: %d bytes", len(b))
	}
	if got := c.count(); got != 1 {
		t.Fatalf("%d fsyncs within syncWithin of the first, want 1", got)
	}
	j.Close()
	if got := c.count(); got != 2 {
		t.Fatalf("%d fsyncs after close, want 2 (close syncs what was written)", got)
	}
}

// TestJournalSyncWithinRotation: a file the writer replaces is fsynced at
// its final size first, since the syncer will not see it again.
func TestJournalSyncWithinRotation(t *testing.T) {
	var c syncCounter
	dir := t.TempDir()
	path := filepath.Join(dir, "j")
	rotations := 0
	j, err := openJournal(path, journalOptions{
		sync:       c.sync,
		syncWithin: time.Hour,
		limit:      1,
		full: func(f *os.File, size int64) (*os.File, int64, error) {
			c.mu.Lock()
			synced := c.sizes[f.Name()]
			c.mu.Unlock()
			if len(synced) == 0 || synced[len(synced)-1] != size {
				t.Errorf("rotation %d: %s of %d bytes replaced after fsyncs at %v", rotations, f.Name(), size, synced)
			}
			rotations++
			aside := fmt.Sprintf("%s.%d", path, rotations)
			if err := os.Rename(path, aside); err != nil {
				return f, size, err
			}
			f.Close()
			nf, nsize, err := openAppend(path)
			return nf, nsize, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := j.Append([]byte("line\n")); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	if rotations != 4 {
		t.Fatalf("%d rotations, want 4", rotations)
	}
}

// TestJournalSyncFailureFailsNext: a background fsync that fails is
// reported, and the next batch fails with it, so its calls fail safe;
// the batch after that is written to the reopened file.
func TestJournalSyncFailureFailsNext(t *testing.T) {
	var c syncCounter
	c.fail = syscall.EIO
	var logged atomic.Int64
	path := filepath.Join(t.TempDir(), "j")
	j, err := openJournal(path, journalOptions{
		sync:       c.sync,
		syncWithin: time.Millisecond,
		logErr:     func(error) { logged.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Append([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return logged.Load() == 1 })
	if err := j.Append([]byte("two\n")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append after a failed fsync: %v, want EIO", err)
	}
	if err := j.Append([]byte("three\n")); err != nil {
		t.Fatalf("append after the failure was reported: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one\nthree\n" {
		t.Fatalf("file holds %q", b)
	}
}

// TestJournalStuckSyncFails: while a background fsync does not return,
// appends go on for syncLimit and then fail, as appends to a disk that
// stops taking writes do; once the fsync returns they succeed again.
func TestJournalStuckSyncFails(t *testing.T) {
	stuck, entered := make(chan struct{}), make(chan struct{}, 1)
	syncStuck := func(f *os.File) error {
		select {
		case entered <- struct{}{}:
			<-stuck
		default:
		}
		return f.Sync()
	}
	j, err := openJournal(filepath.Join(t.TempDir(), "j"), journalOptions{
		sync:       syncStuck,
		syncWithin: time.Millisecond,
		syncLimit:  50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	// Runs before Close, so that a failure does not leave it waiting
	// for the stuck syncer.
	release := sync.OnceFunc(func() { close(stuck) })
	defer release()
	if err := j.Append([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	<-entered // the syncer is stuck in its fsync of "one"
	time.Sleep(100 * time.Millisecond)
	if err := j.Append([]byte("two\n")); !errors.Is(err, errSlow) {
		t.Fatalf("append while a write %v old is not fsynced: %v, want errSlow", 100*time.Millisecond, err)
	}
	release()
	waitFor(t, func() bool { return j.Append([]byte("three\n")) == nil })
}
