package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// errClosed reports a write to a journal that was closed.
var errClosed = errors.New("journal closed")

// journal is an append-only file of lines written with group commit: each
// Append returns only after its line is written and fsynced, and
// concurrent appends share one write and one fsync. A failed write is
// truncated away, so the file only ever holds acknowledged lines.
type journal struct {
	path string
	// full, when set, is called by the writer goroutine before a batch
	// when the file has grown past limit; it replaces the file (rotation
	// or compaction) and returns the new size.
	limit int64
	full  func(f *os.File, size int64) (*os.File, int64, error)
	// logErr reports errors the journal survived (a failed rotation).
	logErr func(error)
	// coming, when set, counts the lines that callers are about to
	// append (the audit's decisions being judged). While more are
	// coming than a batch holds, the writer waits up to linger for them
	// before its fsync: each fsync costs ~135 us of CPU on ext4 here
	// whatever it carries, so under load fewer, larger batches leave
	// more CPU for decisions. An isolated append never waits.
	coming *atomic.Int64
	linger time.Duration

	reqs chan journalReq
	quit chan struct{}
	done chan struct{}
	once sync.Once

	// Owned by the writer goroutine.
	f    *os.File
	size int64
}

type journalReq struct {
	line []byte
	errc chan error
}

// maxBatch bounds how many lines share one fsync.
const maxBatch = 512

// openJournal opens (creating) the file at path for appending and starts
// its writer.
func openJournal(path string, limit int64, full func(*os.File, int64) (*os.File, int64, error), logErr func(error)) (*journal, error) {
	return openJournalLinger(path, limit, full, logErr, nil, 0)
}

// openJournalLinger is openJournal whose writer waits up to linger for
// the lines coming counts (see journal.coming).
func openJournalLinger(path string, limit int64, full func(*os.File, int64) (*os.File, int64, error), logErr func(error), coming *atomic.Int64, linger time.Duration) (*journal, error) {
	f, size, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	j := &journal{
		path:   path,
		limit:  limit,
		full:   full,
		logErr: logErr,
		coming: coming,
		linger: linger,
		reqs:   make(chan journalReq),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
		f:      f,
		size:   size,
	}
	go j.run()
	return j, nil
}

// openAppend opens path for appending with mode 0600, makes a new file's
// directory entry durable, and returns the current size.
func openAppend(path string) (*os.File, int64, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("failed to open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("failed to stat %s: %w", path, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, 0, err
		}
	}
	return f, fi.Size(), nil
}

// syncDir fsyncs a directory so renames and new entries in it survive a
// crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("failed to open %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("failed to sync %s: %w", dir, err)
	}
	return nil
}

// Append writes line (which must end in a newline) durably.
func (j *journal) Append(line []byte) error {
	return j.AppendWithin(line, 0)
}

// errSlow reports that the disk did not take a line in time.
var errSlow = errors.New("write not acknowledged in time")

// AppendWithin is Append that gives up after timeout (0: never). A line
// given up on after the writer took it may still reach the file later;
// the caller must treat the call as failed either way.
func (j *journal) AppendWithin(line []byte, timeout time.Duration) error {
	var expired <-chan time.Time
	if timeout > 0 {
		t := getTimer(timeout)
		defer putTimer(t)
		expired = t.C
	}
	errc := errChans.Get().(chan error)
	select {
	case j.reqs <- journalReq{line, errc}:
	case <-j.quit:
		return errClosed
	case <-expired:
		return fmt.Errorf("%s: %w", j.path, errSlow)
	}
	select {
	case err := <-errc:
		// Drained, and the writer sends exactly once: safe to reuse.
		errChans.Put(errc)
		return err
	case <-expired:
		// The writer may still answer on errc: it is not reused.
		return fmt.Errorf("%s: %w", j.path, errSlow)
	}
}

// errChans and timers are reused across appends: each decision waits on
// one of each, and allocating them per call was measurable garbage.
var (
	errChans = sync.Pool{New: func() any { return make(chan error, 1) }}
	timers   sync.Pool
)

// getTimer returns a running timer that fires after d.
func getTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

// putTimer stops t and keeps it for reuse. Since Go 1.23 (go.mod says
// 1.26) a stopped or reset timer's channel never delivers a stale value,
// so the next user cannot see this one's expiry.
func putTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

// Close stops the writer after the batch in progress and closes the file.
func (j *journal) Close() error {
	j.once.Do(func() { close(j.quit) })
	<-j.done
	return nil
}

func (j *journal) run() {
	defer close(j.done)
	defer func() {
		if j.f != nil {
			j.f.Close()
		}
	}()
	batch := make([]journalReq, 0, maxBatch)
	var buf []byte
	var wait *time.Timer
	for {
		select {
		case r := <-j.reqs:
			batch = append(batch[:0], r)
		more:
			for len(batch) < maxBatch {
				select {
				case r := <-j.reqs:
					batch = append(batch, r)
				default:
					break more
				}
			}
			if j.coming != nil && j.linger > 0 && int64(len(batch)) < min(j.coming.Load(), maxBatch) {
				if wait == nil {
					wait = time.NewTimer(j.linger)
				} else {
					wait.Reset(j.linger)
				}
			linger:
				for len(batch) < maxBatch {
					select {
					case r := <-j.reqs:
						batch = append(batch, r)
						if int64(len(batch)) >= j.coming.Load() {
							break linger
						}
					case <-wait.C:
						break linger
					case <-j.quit:
						break linger
					}
				}
				wait.Stop()
			}
			buf = buf[:0]
			for _, r := range batch {
				buf = append(buf, r.line...)
			}
			err := j.write(buf)
			for _, r := range batch {
				r.errc <- err
			}
			clear(batch)
		case <-j.quit:
			return
		}
	}
}

// write appends buf and fsyncs. On failure it truncates the file back to
// the last acknowledged size and drops the handle so the next batch
// reopens the file.
func (j *journal) write(buf []byte) error {
	if j.f == nil {
		f, size, err := openAppend(j.path)
		if err != nil {
			return err
		}
		j.f, j.size = f, size
	}
	if j.full != nil && j.size > 0 && j.size+int64(len(buf)) > j.limit {
		// full returns the file to go on with: the new one, or the old
		// one when it could not replace it (keep appending rather than
		// lose records), or nil when neither is usable.
		f, size, err := j.full(j.f, j.size)
		if err != nil && j.logErr != nil {
			j.logErr(err)
		}
		if f == nil {
			j.f = nil
			return fmt.Errorf("failed to replace %s: %w", j.path, err)
		}
		j.f, j.size = f, size
	}
	n, err := j.f.Write(buf)
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		if n > 0 {
			// Best effort: the caller is told the write failed, so the
			// lines must not stay behind as acknowledged-looking records.
			_ = j.f.Truncate(j.size)
		}
		j.f.Close()
		j.f = nil
		return fmt.Errorf("failed to append to %s: %w", j.path, err)
	}
	j.size += int64(n)
	return nil
}
