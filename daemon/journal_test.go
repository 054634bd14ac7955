package daemon

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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
			j, err := openJournalLinger(filepath.Join(t.TempDir(), "j"), 1, func(f *os.File, size int64) (*os.File, int64, error) {
				batches.Add(1)
				return f, size, nil
			}, nil, &coming, time.Hour)
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
	j, err := openJournalLinger(path, 0, nil, nil, &coming, time.Hour)
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
