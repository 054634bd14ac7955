package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Errors a caller can tell apart. Any error from Take means no snapshot
// is held, so no evidence may be given.
var (
	// ErrOverBudget: a file, the call or the store would exceed its size
	// or count budget.
	ErrOverBudget = errors.New("over the snapshot budget")
	// ErrUnsafe: a target is a symlink, has a symlink on its way, has
	// more than one hard link, or is not a regular file.
	ErrUnsafe = errors.New("target cannot be preserved safely")
	// ErrNotFound: no snapshot has this id.
	ErrNotFound = errors.New("no such snapshot")
	// ErrTampered: a stored object no longer has the hash it was stored
	// under.
	ErrTampered = errors.New("snapshot store was modified")
	// ErrBadID: the id is not one narrowd issues.
	ErrBadID = errors.New("not a call id")
)

// Budget bounds what the store copies. A zero field takes its default.
type Budget struct {
	// MaxFileBytes bounds one file (default 16 MiB).
	MaxFileBytes int64
	// MaxCallBytes bounds one call's files together (default 64 MiB).
	// Hashing runs at about 5 ms/MiB here, so the default keeps a
	// snapshot well inside the shim's 3 s timeout.
	MaxCallBytes int64
	// MaxFiles bounds how many paths one call may name (default 64).
	MaxFiles int
	// MaxStoreBytes bounds the whole store (default 2 GiB); prune frees
	// room.
	MaxStoreBytes int64
}

// Defaults for [Budget].
const (
	DefaultMaxFileBytes  = 16 << 20
	DefaultMaxCallBytes  = 64 << 20
	DefaultMaxFiles      = 64
	DefaultMaxStoreBytes = 2 << 30
)

func (b Budget) filled() Budget {
	if b.MaxFileBytes <= 0 {
		b.MaxFileBytes = DefaultMaxFileBytes
	}
	if b.MaxCallBytes <= 0 {
		b.MaxCallBytes = DefaultMaxCallBytes
	}
	if b.MaxFiles <= 0 {
		b.MaxFiles = DefaultMaxFiles
	}
	if b.MaxStoreBytes <= 0 {
		b.MaxStoreBytes = DefaultMaxStoreBytes
	}
	return b
}

// Target is one path a call would change.
type Target struct {
	// Root is the workspace root the path was proven under; Path is
	// absolute and under Root.
	Root, Path string
	// Recursive reports that the call may write a tree at Path (mv,
	// cp -r): an absent path is then refused, since undo could not
	// remove what appears there.
	Recursive bool
}

// File is what a snapshot holds for one path.
type File struct {
	Path string `json:"path"`
	Root string `json:"root"`
	// Exists is false for a path that did not exist at check time:
	// undo removes what the call created there.
	Exists bool   `json:"exists"`
	Size   int64  `json:"size,omitempty"`
	Mode   uint32 `json:"mode,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Reflink reports the copy shares extents with the original.
	Reflink bool `json:"reflink,omitempty"`
}

// Snapshot is one call's preserved files.
type Snapshot struct {
	ID    string    `json:"id"`
	Time  time.Time `json:"time"`
	Files []File    `json:"files"`
	// Of names the snapshot an undo replaced, for the copy undo takes of
	// what it overwrites.
	Of string `json:"of,omitempty"`
	// Runs are a sandboxed run's changes, one per writable root.
	Runs []Run `json:"runs,omitempty"`
}

// Bytes is the size of the files the snapshot holds, a run's kept
// originals included.
func (s Snapshot) Bytes() int64 {
	var n int64
	for _, f := range s.Files {
		n += f.Size
	}
	for _, r := range s.Runs {
		if r.State == RunApplied {
			_, before, _ := r.Count()
			n += before
		}
	}
	return n
}

// Store is a snapshot store in one directory. It is safe for concurrent
// use, also by several processes (the daemon and `narrowd undo`): Take
// holds a shared lock on the store, Restore and Prune an exclusive one.
type Store struct {
	dir    string
	budget Budget
	now    func() time.Time

	mu sync.Mutex
	// used is the bytes of objects as last counted (plus what this
	// process added since); recounted before refusing for the store
	// budget, since another process may have pruned.
	used int64

	// indexDir shares fsyncs of the index directory among concurrent
	// takes.
	indexDir dirSync
}

var idPattern = regexp.MustCompile(`^[0-9a-f]{16,64}$`)

// ValidID reports whether id has the form of a call id narrowd issues.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Open opens (creating, 0700) the store in dir.
func Open(dir string, b Budget) (*Store, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("snapshot store %q: not an absolute path", dir)
	}
	for _, d := range []string{dir, filepath.Join(dir, "objects"), filepath.Join(dir, "index")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("snapshot store: %w", err)
		}
		fi, err := os.Lstat(d)
		if err != nil {
			return nil, fmt.Errorf("snapshot store: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("snapshot store: %s is not a directory", d)
		}
	}
	s := &Store{dir: dir, budget: b.filled(), now: time.Now}
	// A process killed while it wrote an index leaves its temporary
	// file: nothing else removes those.
	sweepIncoming(filepath.Join(dir, "index"), time.Hour)
	used, err := s.count()
	if err != nil {
		return nil, err
	}
	s.used = used
	return s, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) objectPath(sum string) string {
	return filepath.Join(s.dir, "objects", sum[:2], sum)
}

func (s *Store) indexPath(id string) string {
	return filepath.Join(s.dir, "index", id+".json")
}

// lock takes a flock on the store. Each call opens its own descriptor,
// so that goroutines of one process exclude each other as processes do.
func (s *Store) lock(how int) (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("snapshot store lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("snapshot store lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// count adds up the sizes of the stored objects and of the files runs'
// originals keep.
func (s *Store) count() (int64, error) {
	var n int64
	for _, dir := range []string{"objects", "sets"} {
		err := filepath.WalkDir(filepath.Join(s.dir, dir), func(_ string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					n += fi.Size()
				}
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("snapshot store: %w", err)
		}
	}
	return n, nil
}

// reserve claims room for n more bytes in the store.
func (s *Store) reserve(n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used+n > s.budget.MaxStoreBytes {
		used, err := s.count()
		if err != nil {
			return err
		}
		s.used = used
		if s.used+n > s.budget.MaxStoreBytes {
			return fmt.Errorf("%w: the store holds %d bytes of %d", ErrOverBudget, s.used, s.budget.MaxStoreBytes)
		}
	}
	s.used += n
	return nil
}

func (s *Store) release(n int64) {
	s.mu.Lock()
	s.used -= n
	s.mu.Unlock()
}

// Take preserves the targets under id: all of them or none. A target
// that does not exist is recorded as absent. Any error means nothing is
// held for id.
func (s *Store) Take(id string, targets []Target) (Snapshot, error) {
	if !ValidID(id) {
		return Snapshot{}, ErrBadID
	}
	unlock, err := s.lock(unix.LOCK_SH)
	if err != nil {
		return Snapshot{}, err
	}
	defer unlock()
	return s.take(id, "", targets)
}

func (s *Store) take(id, of string, targets []Target) (Snapshot, error) {
	if len(targets) == 0 {
		return Snapshot{}, errors.New("snapshot: no targets")
	}
	if len(targets) > s.budget.MaxFiles {
		return Snapshot{}, fmt.Errorf("%w: %d files, at most %d", ErrOverBudget, len(targets), s.budget.MaxFiles)
	}
	snap := Snapshot{ID: id, Time: s.now().UTC(), Of: of}
	left := s.budget.MaxCallBytes
	for _, t := range targets {
		f, err := s.preserve(t, min(left, s.budget.MaxFileBytes))
		if err != nil {
			// Objects already stored stay until prune collects them:
			// no index names them, so nothing relies on them.
			return Snapshot{}, err
		}
		left -= f.Size
		snap.Files = append(snap.Files, f)
	}
	if err := s.writeIndex(snap); err != nil {
		return Snapshot{}, err
	}
	return snap, nil
}

// rel returns t's path relative to its root, refusing anything that is
// not strictly beneath it.
func rel(root, path string) (string, error) {
	if !filepath.IsAbs(root) || !filepath.IsAbs(path) {
		return "", fmt.Errorf("%w: %s: paths must be absolute", ErrUnsafe, path)
	}
	if filepath.Clean(root) == "/" {
		// No workspace is the whole file system (proofs drops such a
		// root too); an index that says so was not written by narrowd.
		return "", fmt.Errorf("%w: %s: the root / is no workspace", ErrUnsafe, path)
	}
	r, err := filepath.Rel(root, path)
	if err != nil || !filepath.IsLocal(r) || r == "." {
		return "", fmt.Errorf("%w: %s is not beneath %s", ErrUnsafe, path, root)
	}
	return r, nil
}

// beneath is the resolution every open of a workspace path uses: no
// component may be a symlink or leave the root.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func openRoot(root string) (int, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("workspace root %s: %w", root, err)
	}
	return fd, nil
}

// preserve copies one target into the store.
func (s *Store) preserve(t Target, limit int64) (File, error) {
	f := File{Path: filepath.Clean(t.Path), Root: filepath.Clean(t.Root)}
	r, err := rel(f.Root, f.Path)
	if err != nil {
		return File{}, err
	}
	rootfd, err := openRoot(f.Root)
	if err != nil {
		return File{}, err
	}
	defer unix.Close(rootfd)
	fd, err := unix.Openat2(rootfd, r, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY,
		Resolve: beneath,
	})
	switch {
	case errors.Is(err, unix.ENOENT):
		if t.Recursive {
			return File{}, fmt.Errorf("%w: %s does not exist and the call may create a tree there", ErrUnsafe, f.Path)
		}
		return f, nil
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return File{}, fmt.Errorf("%w: %s: a symlink is on the way", ErrUnsafe, f.Path)
	case err != nil:
		return File{}, fmt.Errorf("open %s: %w", f.Path, err)
	}
	src := os.NewFile(uintptr(fd), f.Path)
	defer src.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return File{}, fmt.Errorf("stat %s: %w", f.Path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return File{}, fmt.Errorf("%w: %s is not a regular file", ErrUnsafe, f.Path)
	case st.Nlink != 1:
		return File{}, fmt.Errorf("%w: %s has %d hard links; another may be outside the workspace", ErrUnsafe, f.Path, st.Nlink)
	case st.Size > limit:
		return File{}, fmt.Errorf("%w: %s is %d bytes, over %d", ErrOverBudget, f.Path, st.Size, limit)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return File{}, fmt.Errorf("open %s: %w", f.Path, err)
	}
	if err := s.reserve(st.Size); err != nil {
		return File{}, err
	}
	obj, err := s.store(src, limit)
	if err != nil {
		s.release(st.Size)
		return File{}, fmt.Errorf("copy %s: %w", f.Path, err)
	}
	s.release(st.Size - obj.size)
	f.Exists, f.Size, f.SHA256, f.Reflink = true, obj.size, obj.sum, obj.reflink
	f.Mode = st.Mode & 0o777
	return f, nil
}

// writeIndex records a snapshot durably: temp file, fsync, rename,
// fsync of the directory.
func (s *Store) writeIndex(snap Snapshot) error {
	data, err := json.MarshalIndent(snap, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Join(s.dir, "index")
	if err := writeFileSync(dir, s.indexPath(snap.ID), data, &s.indexDir); err != nil {
		return fmt.Errorf("snapshot index: %w", err)
	}
	return nil
}

// writeFileSync writes name (mode 0600, as CreateTemp makes it) through
// a temporary file in dir: write, fsync, rename, and an fsync of dir
// shared through ds.
func writeFileSync(dir, name string, data []byte, ds *dirSync) error {
	tmp, err := os.CreateTemp(dir, ".incoming-*")
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return err
	}
	renamed = true
	return ds.sync(dir)
}

// dirSync is a group commit for one directory's fsync: a caller that has
// just renamed a file into it needs an fsync that began after the
// rename, and callers that arrive while one runs share the next.
type dirSync struct {
	mu      sync.Mutex
	cond    sync.Cond
	running bool
	// begun counts fsyncs started; ok is the latest that succeeded and
	// failed the latest that failed, with its error.
	begun, ok, failed uint64
	err               error
	// fsync is syncDir unless a test sets it.
	fsync func(dir string) error
}

// sync returns once an fsync of dir that began after the call has
// ended: nil, or an error if it or a later one failed.
func (d *dirSync) sync(dir string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cond.L == nil {
		d.cond.L = &d.mu
	}
	want := d.begun + 1 // the first fsync that begins after now
	for d.ok < want && d.failed < want {
		if d.running {
			d.cond.Wait()
			continue
		}
		d.running = true
		d.begun++
		gen := d.begun
		d.mu.Unlock()
		fsync := d.fsync
		if fsync == nil {
			fsync = syncDir
		}
		err := fsync(dir)
		d.mu.Lock()
		d.running = false
		if err != nil {
			d.failed, d.err = gen, err
		} else {
			d.ok = gen
		}
		d.cond.Broadcast()
	}
	if d.failed >= want {
		// Its own fsync, or a later one, failed: a later success would
		// not prove the rename reached the disk.
		return d.err
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Get reads one snapshot's index.
func (s *Store) Get(id string) (Snapshot, error) {
	if !ValidID(id) {
		return Snapshot{}, ErrBadID
	}
	data, err := os.ReadFile(s.indexPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Snapshot{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", id, err)
	}
	var snap Snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: bad index: %w", id, err)
	}
	if snap.ID != id {
		return Snapshot{}, fmt.Errorf("%w: index %s names %q", ErrTampered, id, snap.ID)
	}
	for _, f := range snap.Files {
		if f.Exists && !validSum(f.SHA256) {
			return Snapshot{}, fmt.Errorf("%w: index %s has a bad hash for %s", ErrTampered, id, f.Path)
		}
		if _, err := rel(f.Root, f.Path); err != nil {
			// narrowd only preserves files under a workspace root; an
			// index that says otherwise would steer undo elsewhere.
			return Snapshot{}, fmt.Errorf("%w: index %s: %w", ErrTampered, id, err)
		}
	}
	if err := validRuns(snap); err != nil {
		return Snapshot{}, fmt.Errorf("%w: index %s: %w", ErrTampered, id, err)
	}
	return snap, nil
}

var sumPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

func validSum(s string) bool { return sumPattern.MatchString(s) }

// List returns every snapshot, oldest first. Index files that do not
// read are skipped.
func (s *Store) List() ([]Snapshot, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, "index"))
	if err != nil {
		return nil, fmt.Errorf("snapshot store: %w", err)
	}
	var out []Snapshot
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !ValidID(id) {
			continue
		}
		snap, err := s.Get(id)
		if err != nil {
			continue
		}
		out = append(out, snap)
	}
	slices.SortStableFunc(out, func(a, b Snapshot) int { return a.Time.Compare(b.Time) })
	return out, nil
}

// Usage is the bytes the store's objects take on disk, counted now.
func (s *Store) Usage() (int64, error) { return s.count() }

// sweepIncoming removes the temporary files (.incoming-*) in dir older
// than age: copies and index writes a killed process left. Younger ones
// may belong to a take in progress in another process. Best effort.
func sweepIncoming(dir string, age time.Duration) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), ".incoming-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) >= age {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
