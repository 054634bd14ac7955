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
//
// Appenders copy their line into the open batch under a mutex and wait
// for that batch to be closed; the writer swaps in a fresh batch, writes
// and fsyncs the old one, and wakes all its waiters at once. An append
// wakes the writer only when it is idle, or lingering and the batch now
// holds every append that was announced: under load most appends cost a
// copy and a wait, not a channel hand-off and a wake-up each.
type journal struct {
	path string
	journalOptions

	mu sync.Mutex
	// cur is the batch appends go into; the writer owns it from the
	// moment it swaps it out.
	cur *batch
	// writerIdle: the writer waits for a first line (kick it).
	// lingering: it waits for announced lines (kick it once the batch
	// holds them all).
	writerIdle, lingering bool
	closed                bool
	// spare is the last written batch's buffer, reused for the next.
	spare []byte
	// syncErr is a background fsync's failure; the next batch fails
	// with it, so that a call learns of it and fails safe.
	syncErr error
	// writes counts the writer's writes; unsyncedSince is when the
	// oldest write no fsync has yet covered was made, or earlier (zero:
	// every write is synced).
	writes        uint64
	unsyncedSince time.Time

	kick chan struct{} // capacity 1: a wake-up for the writer
	quit chan struct{}
	done chan struct{}
	once sync.Once

	// syncKick wakes the syncer (capacity 1); syncDone is closed when
	// it has stopped. Both are nil unless SyncWithin is set.
	syncKick, syncDone chan struct{}

	// fileMu keeps the syncer off f while the writer replaces or closes
	// it; the writer, the only goroutine that sets f, reads it freely.
	fileMu sync.Mutex
	// Owned by the writer goroutine.
	f    *os.File
	size int64
}

// journalOptions are a journal's settings. The zero value is a journal
// that never rotates and fsyncs each batch before acknowledging it.
type journalOptions struct {
	// full, when set, is called by the writer goroutine before a batch
	// when the file has grown past limit; it replaces the file (rotation
	// or compaction) and returns the new size.
	limit int64
	full  func(f *os.File, size int64) (*os.File, int64, error)
	// logErr reports errors the journal survived (a failed rotation, a
	// failed background fsync).
	logErr func(error)
	// coming, when set, counts the lines that callers are about to
	// append (the audit's decisions being judged). While more are
	// coming than a batch holds, the writer waits up to linger for them
	// before it writes, so that under load fewer, larger batches share
	// the costs per write and per fsync. An isolated append never waits.
	coming *atomic.Int64
	linger time.Duration
	// syncWithin, when positive, takes the fsync off the append's path.
	// A batch is acknowledged once written: the kernel has its bytes,
	// so a killed daemon loses none of them, and only a crash of the
	// machine could lose the last syncWithin of lines. A syncer fsyncs
	// at once when idle and at most once per syncWithin under load. On
	// this project's virtual disks each small fsync costs the writer
	// ~135 us of CPU plus ~6 ns per byte, which a fsync per batch of
	// 64 callers made the larger part of a decision's cost.
	syncWithin time.Duration
	// syncLimit, with syncWithin, fails batches while a write older than
	// this is still not fsynced: a disk that stops taking fsyncs makes
	// calls fail safe, as one that stops taking writes does (0: never).
	syncLimit time.Duration
	// sync fsyncs a file; nil means (*os.File).Sync. Tests make it fail.
	sync func(*os.File) error
}

// batch is the lines that share one write and one fsync.
type batch struct {
	buf []byte
	n   int
	// ends are the end offsets in buf of each append's line, in order;
	// a withdrawn line is empty.
	ends []int
	// taken: the writer swapped the batch out and writes it; its lines
	// can no longer be withdrawn. finished: the write is over, and late
	// lines can no longer join it. Both are set under the journal's mu.
	taken, finished bool
	// late are lines of appenders that gave up on the batch while it
	// was being written (corrections): written after it.
	late []byte
	// done is closed once err is set: the batch is on disk, or failed.
	done chan struct{}
	err  error
}

// withdraw removes line i from a batch the writer has not taken.
func (b *batch) withdraw(i int) {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	n := b.ends[i] - start
	b.buf = append(b.buf[:start], b.buf[b.ends[i]:]...)
	for k := i; k < len(b.ends); k++ {
		b.ends[k] -= n
	}
	b.n--
}

// maxBatch bounds how many lines share one fsync: an append finding the
// open batch this full wakes the writer.
const maxBatch = 512

// openJournal opens (creating) the file at path for appending and starts
// its writer, and its syncer when o.syncWithin is set.
func openJournal(path string, o journalOptions) (*journal, error) {
	f, size, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	if o.sync == nil {
		o.sync = (*os.File).Sync
	}
	if o.logErr == nil {
		o.logErr = func(error) {}
	}
	j := &journal{
		path:           path,
		journalOptions: o,
		cur:            &batch{done: make(chan struct{})},
		kick:           make(chan struct{}, 1),
		quit:           make(chan struct{}),
		done:           make(chan struct{}),
		f:              f,
		size:           size,
	}
	if o.syncWithin > 0 {
		j.syncKick, j.syncDone = make(chan struct{}, 1), make(chan struct{})
		go j.syncLoop()
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
	return j.AppendWithin(line, 0, nil)
}

var (
	// errSlow reports that the disk did not take a line in time.
	errSlow = errors.New("write not acknowledged in time")
	// errWithdrawn reports a line given up on before the writer took
	// it: it is not written at all.
	errWithdrawn = errors.New("not written in time, and withdrawn")
)

// AppendWithin is Append that gives up after timeout (0: never). The
// caller must treat the call as failed either way, and the file says
// exactly what happened: a line still waiting for the writer is
// withdrawn and never written (errWithdrawn); a line whose batch is
// being written may still reach the file, so the line late returns,
// when late is not nil, is written after that batch, for readers to
// correct it (errSlow). late runs only then, under the journal's lock.
// line is copied: the caller may reuse it as soon as AppendWithin
// returns.
func (j *journal) AppendWithin(line []byte, timeout time.Duration, late func() []byte) error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return errClosed
	}
	b := j.cur
	b.buf = append(b.buf, line...)
	b.ends = append(b.ends, len(b.buf))
	idx := len(b.ends) - 1
	b.n++
	wake := j.writerIdle || b.n >= maxBatch ||
		(j.lingering && int64(b.n) >= j.coming.Load())
	if wake {
		j.writerIdle, j.lingering = false, false
	}
	j.mu.Unlock()
	if wake {
		select {
		case j.kick <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	if timeout <= 0 {
		<-b.done
		return b.err
	}
	select {
	case <-b.done:
		return b.err
	default:
	}
	t := getTimer(timeout)
	defer putTimer(t)
	select {
	case <-b.done:
		return b.err
	case <-t.C:
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case b.finished:
		// The write ended as the timer fired: its result stands.
		j.mu.Unlock()
		<-b.done
		j.mu.Lock()
		return b.err
	case !b.taken:
		b.withdraw(idx)
		return fmt.Errorf("%s: %w", j.path, errWithdrawn)
	default:
		if late != nil {
			b.late = append(b.late, late()...)
		}
		return fmt.Errorf("%s: %w", j.path, errSlow)
	}
}

// timers are reused across appends: each decision may wait on one, and
// allocating them per call was measurable garbage.
var timers sync.Pool

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

// Close stops the writer after the batch in progress, fsyncs what was
// written and closes the file. Appends not yet written fail with
// errClosed.
func (j *journal) Close() error {
	j.once.Do(func() { close(j.quit) })
	<-j.done
	if j.syncDone != nil {
		<-j.syncDone
	}
	return nil
}

// next returns the open batch once it should be written, swapping in an
// empty one, or nil when the writer must wait (for a first line, or for
// announced lines while lingering), having marked why so that an append
// kicks it. After a linger (lingered) it takes whatever the batch holds.
func (j *journal) next(lingered bool) (b *batch, lingering bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	b = j.cur
	switch {
	case b.n == 0:
		j.writerIdle = true
		return nil, false
	case !lingered && j.coming != nil && j.linger > 0 && int64(b.n) < min(j.coming.Load(), maxBatch):
		j.lingering = true
		return nil, true
	}
	j.cur = &batch{buf: j.spare[:0], done: make(chan struct{})}
	j.spare = nil
	j.writerIdle, j.lingering = false, false
	b.taken = true
	return b, false
}

// finish ends batch b's write: late lines of appenders that gave up on
// it join the open batch, to be written next.
func (j *journal) finish(b *batch) {
	j.mu.Lock()
	b.finished = true
	if len(b.late) > 0 && !j.closed {
		j.cur.buf = append(j.cur.buf, b.late...)
		j.cur.ends = append(j.cur.ends, len(j.cur.buf))
		j.cur.n++
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
	j.mu.Unlock()
}

func (j *journal) run() {
	defer close(j.done)
	defer func() {
		j.drop()
		j.mu.Lock()
		j.closed = true
		b := j.cur
		j.mu.Unlock()
		// No append joins a closed journal's batch: fail its waiters.
		b.err = errClosed
		close(b.done)
	}()
	var wait *time.Timer
	for {
		b, lingering := j.next(false)
		if b == nil {
			var expired <-chan time.Time
			if lingering {
				if wait == nil {
					wait = time.NewTimer(j.linger)
				} else {
					wait.Reset(j.linger)
				}
				expired = wait.C
			}
			select {
			case <-j.kick:
			case <-expired:
			case <-j.quit:
				if !lingering {
					return
				}
			}
			if wait != nil {
				wait.Stop()
			}
			if !lingering {
				continue
			}
			if b, _ = j.next(true); b == nil {
				continue
			}
		}
		b.err = j.write(b.buf)
		j.finish(b)
		close(b.done)
		// The waiters read only done and err: the buffer is free.
		if cap(b.buf) <= maxSpareBatch {
			j.mu.Lock()
			j.spare = b.buf
			j.mu.Unlock()
		}
	}
}

// maxSpareBatch bounds the batch buffer kept for reuse.
const maxSpareBatch = 1 << 20

// write appends buf and, unless a syncer does it later, fsyncs. On
// failure it truncates the file back to the last acknowledged size and
// drops the handle so the next batch reopens the file.
func (j *journal) write(buf []byte) error {
	j.mu.Lock()
	syncErr := j.syncErr
	j.syncErr = nil
	since := j.unsyncedSince
	j.mu.Unlock()
	if j.syncLimit > 0 && !since.IsZero() && time.Since(since) > j.syncLimit {
		return fmt.Errorf("%s: fsync pending for %v: %w", j.path, time.Since(since).Round(time.Millisecond), errSlow)
	}
	if syncErr != nil {
		// Lines acknowledged earlier may not be on disk: this batch's
		// callers hear of it and fail safe, and the next batch starts
		// over on a reopened file.
		j.drop()
		return fmt.Errorf("failed to sync %s: %w", j.path, syncErr)
	}
	if j.f == nil {
		f, size, err := openAppend(j.path)
		if err != nil {
			return err
		}
		j.setFile(f)
		j.size = size
	}
	if j.full != nil && j.size > 0 && j.size+int64(len(buf)) > j.limit {
		if err := j.replace(); err != nil {
			return err
		}
	}
	n, err := j.f.Write(buf)
	if err == nil && j.syncWithin <= 0 {
		err = j.sync(j.f)
	}
	if err != nil {
		if n > 0 {
			// Best effort: the caller is told the write failed, so the
			// lines must not stay behind as acknowledged-looking records.
			_ = j.f.Truncate(j.size)
		}
		j.drop()
		return fmt.Errorf("failed to append to %s: %w", j.path, err)
	}
	j.size += int64(n)
	if j.syncKick != nil {
		j.mu.Lock()
		j.writes++
		if j.unsyncedSince.IsZero() {
			j.unsyncedSince = time.Now()
		}
		j.mu.Unlock()
		select {
		case j.syncKick <- struct{}{}:
		default: // a sync is already due
		}
	}
	return nil
}

// replace hands the full file to j.full and goes on with the file it
// returns: the new one, or the old one when it could not replace it (keep
// appending rather than lose records). A file replaced is fsynced first,
// since no syncer will see it again.
func (j *journal) replace() error {
	if j.syncWithin > 0 {
		if err := j.sync(j.f); err != nil {
			j.drop()
			return fmt.Errorf("failed to sync %s: %w", j.path, err)
		}
	}
	j.fileMu.Lock()
	f, size, err := j.full(j.f, j.size)
	j.f, j.size = f, size
	j.fileMu.Unlock()
	if err != nil {
		j.logErr(err)
	}
	if f == nil {
		return fmt.Errorf("failed to replace %s: %w", j.path, err)
	}
	return nil
}

// setFile makes f the file appended to.
func (j *journal) setFile(f *os.File) {
	j.fileMu.Lock()
	j.f = f
	j.fileMu.Unlock()
}

// drop closes the file, after a failure (the next batch reopens it) or
// on close. With a syncer, what was written and acknowledged is fsynced
// first, since the syncer will not see this handle again.
func (j *journal) drop() {
	j.fileMu.Lock()
	if j.f != nil {
		if j.syncWithin > 0 {
			if err := j.sync(j.f); err != nil {
				j.logErr(fmt.Errorf("failed to sync %s before closing it: %w", j.path, err))
			}
		}
		j.f.Close()
		j.f = nil
	}
	j.fileMu.Unlock()
}

// syncLoop fsyncs the file when the writer has written to it: at once
// when it was idle, else once syncWithin has passed since its last
// fsync began, which bounds how long a written line waits for the disk.
func (j *journal) syncLoop() {
	defer close(j.syncDone)
	pause := time.NewTimer(0)
	<-pause.C
	for {
		select {
		case <-j.syncKick:
		case <-j.quit:
			return // the writer syncs on its way out
		}
		j.mu.Lock()
		began, covered := time.Now(), j.writes
		j.mu.Unlock()
		j.fileMu.Lock()
		var err error
		if j.f != nil {
			err = j.sync(j.f)
		}
		j.fileMu.Unlock()
		j.mu.Lock()
		switch {
		case err != nil:
			j.syncErr = err
		case j.writes == covered:
			j.unsyncedSince = time.Time{}
		default:
			// Writes made during the fsync may not be covered; they
			// are younger than its start.
			j.unsyncedSince = began
		}
		j.mu.Unlock()
		if err != nil {
			j.logErr(fmt.Errorf("failed to sync %s: %w", j.path, err))
		}
		pause.Reset(j.syncWithin - time.Since(began))
		select {
		case <-pause.C:
		case <-j.quit:
			pause.Stop()
			return
		}
	}
}
