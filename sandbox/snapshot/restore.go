package snapshot

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Restored says what undo did to one path.
type Restored struct {
	Path string `json:"path"`
	// Action is "restored", "removed", "unchanged" or "kept" (a
	// directory the call created that is not empty).
	Action string `json:"action"`
	// Was describes what was at the path before the undo: "absent",
	// "sha256:…", "symlink to …", "directory" or "other".
	Was string `json:"was"`
}

// Report is the outcome of one undo.
type Report struct {
	ID    string     `json:"id"`
	Files []Restored `json:"files"`
	// Saved is the id of the snapshot of what the undo overwrote, so the
	// undo can itself be undone; empty when nothing was overwritten.
	Saved string `json:"saved,omitempty"`
}

// Restore puts back the files of snapshot id: their bytes as of check
// time, byte for byte, and removes what exists where nothing did. It
// re-hashes every stored copy before it touches the workspace and
// refuses if one changed. What it overwrites is first preserved as a new
// snapshot (Report.Saved); when that is impossible (a file with hard
// links, over budget) it refuses unless force is set.
func (s *Store) Restore(id string, force bool) (Report, error) {
	rep := Report{ID: id}
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return rep, err
	}
	defer unlock()
	snap, err := s.Get(id)
	if err != nil {
		return rep, err
	}
	if len(snap.Runs) > 0 {
		return rep, s.restoreRuns(&snap, &rep)
	}
	for _, f := range snap.Files {
		if f.Exists {
			if err := s.verify(f); err != nil {
				return rep, err
			}
		}
	}
	saved, err := s.saveCurrent(snap)
	switch {
	case err != nil && !force:
		return rep, fmt.Errorf("what undo would overwrite cannot be preserved first (use --force to overwrite it anyway): %w", err)
	case err == nil:
		rep.Saved = saved
	}
	var errs []error
	for _, f := range snap.Files {
		r, err := s.restoreOne(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Files = append(rep.Files, r)
	}
	return rep, errors.Join(errs...)
}

// saveCurrent preserves the regular files that undo would replace or
// remove, as a snapshot of its own. It returns "" when there is nothing
// to preserve.
func (s *Store) saveCurrent(snap Snapshot) (string, error) {
	var targets []Target
	for _, f := range snap.Files {
		st, err := lstatBeneath(f.Root, f.Path)
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			// Absent, a symlink or a directory: nothing of content to
			// keep (a symlink is replaced, never followed).
			continue
		}
		targets = append(targets, Target{Root: f.Root, Path: f.Path})
	}
	if len(targets) == 0 {
		return "", nil
	}
	id := NewID()
	if _, err := s.take(id, snap.ID, targets); err != nil {
		return "", err
	}
	return id, nil
}

// NewID returns a fresh random id of the form call ids have.
func NewID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lstatBeneath stats path without following a symlink at its end; a
// symlink on the way is an error.
func lstatBeneath(root, path string) (unix.Stat_t, error) {
	var st unix.Stat_t
	r, err := rel(root, path)
	if err != nil {
		return st, err
	}
	rootfd, err := openRoot(root)
	if err != nil {
		return st, err
	}
	defer unix.Close(rootfd)
	pfd, err := openDirBeneath(rootfd, filepath.Dir(r), false)
	if err != nil {
		return st, err
	}
	defer unix.Close(pfd)
	err = unix.Fstatat(pfd, filepath.Base(r), &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// openDirBeneath opens dir (relative to rootfd) with no symlink on the
// way, creating missing components when create is set.
func openDirBeneath(rootfd int, dir string, create bool) (int, error) {
	if dir == "." {
		return unix.Dup(rootfd)
	}
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: beneath}
	fd, err := unix.Openat2(rootfd, dir, how)
	if err == nil || !create || !errors.Is(err, unix.ENOENT) {
		if unsafeOpen(err) {
			return -1, fmt.Errorf("%w: a symlink or file is on the way to %s", ErrUnsafe, dir)
		}
		return fd, err
	}
	cur, err := unix.Dup(rootfd)
	if err != nil {
		return -1, err
	}
	for _, part := range strings.Split(dir, "/") {
		if err := unix.Mkdirat(cur, part, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(cur)
			return -1, err
		}
		next, err := unix.Openat2(cur, part, how)
		unix.Close(cur)
		if err != nil {
			if unsafeOpen(err) {
				return -1, fmt.Errorf("%w: a symlink or file is on the way to %s", ErrUnsafe, dir)
			}
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

// unsafeOpen reports the errors of an open beneath the root that mean a
// symlink (ELOOP, EXDEV) or a non-directory (ENOTDIR) is where a
// directory was.
func unsafeOpen(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR)
}

// restoreOne puts one path back. The parent directory is opened beneath
// the root with no symlink on the way, and the file is replaced by
// rename, so a symlink planted at the path is replaced, not followed.
func (s *Store) restoreOne(f File) (Restored, error) {
	out := Restored{Path: f.Path}
	r, err := rel(f.Root, f.Path)
	if err != nil {
		return out, err
	}
	rootfd, err := openRoot(f.Root)
	if err != nil {
		return out, err
	}
	defer unix.Close(rootfd)
	pfd, err := openDirBeneath(rootfd, filepath.Dir(r), f.Exists)
	if errors.Is(err, unix.ENOENT) && !f.Exists {
		out.Action, out.Was = "unchanged", "absent"
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("undo %s: %w", f.Path, err)
	}
	defer unix.Close(pfd)
	base := filepath.Base(r)
	var st unix.Stat_t
	cur := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	out.Was = describe(pfd, base, st, cur)
	if !f.Exists {
		switch {
		case errors.Is(cur, unix.ENOENT):
			out.Action = "unchanged"
		case cur != nil:
			return out, fmt.Errorf("undo %s: %w", f.Path, cur)
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			if err := unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR); err != nil {
				out.Action = "kept"
				return out, nil
			}
			out.Action = "removed"
		default:
			if err := unix.Unlinkat(pfd, base, 0); err != nil {
				return out, fmt.Errorf("undo %s: %w", f.Path, err)
			}
			out.Action = "removed"
		}
		return out, unix.Fsync(pfd)
	}
	if cur == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return out, fmt.Errorf("undo %s: a directory is there now; it was left in place", f.Path)
	}
	if out.Was == "sha256:"+f.SHA256 && st.Mode&0o777 == f.Mode {
		out.Action = "unchanged"
		return out, nil
	}
	if err := s.writeBack(pfd, base, f); err != nil {
		return out, fmt.Errorf("undo %s: %w", f.Path, err)
	}
	out.Action = "restored"
	return out, nil
}

// writeBack writes the stored bytes to a new file beside the target,
// checks their hash, and renames it over the target.
func (s *Store) writeBack(pfd int, base string, f File) error {
	obj, err := os.Open(s.objectPath(f.SHA256))
	if err != nil {
		return err
	}
	defer obj.Close()
	tmpName := ".narrowd-undo-" + NewID()
	fd, err := unix.Openat(pfd, tmpName, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	tmp := os.NewFile(uintptr(fd), tmpName)
	defer tmp.Close()
	ok := false
	defer func() {
		if !ok {
			unix.Unlinkat(pfd, tmpName, 0)
		}
	}()
	if err := unix.IoctlFileClone(fd, int(obj.Fd())); err != nil {
		if !cloneUnsupported(err) {
			return err
		}
		if _, err := io.Copy(tmp, io.LimitReader(obj, f.Size+1)); err != nil {
			return err
		}
	}
	if err := tmp.Chmod(os.FileMode(f.Mode)); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(h, io.NewSectionReader(tmp, 0, f.Size+1))
	if err != nil {
		return err
	}
	if n != f.Size || hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
		return fmt.Errorf("%w: the restored bytes do not have hash %s", ErrTampered, f.SHA256)
	}
	if err := unix.Renameat(pfd, tmpName, pfd, base); err != nil {
		return err
	}
	ok = true
	return unix.Fsync(pfd)
}

// describe says what is at base now, for the report.
func describe(pfd int, base string, st unix.Stat_t, err error) string {
	switch {
	case errors.Is(err, unix.ENOENT):
		return "absent"
	case err != nil:
		return "unreadable: " + err.Error()
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(pfd, base, buf)
		if err != nil {
			return "symlink"
		}
		return "symlink to " + string(buf[:n])
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFREG:
		if st.Size > DefaultMaxCallBytes {
			return fmt.Sprintf("file of %d bytes", st.Size)
		}
		fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return "file"
		}
		f := os.NewFile(uintptr(fd), base)
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return "file"
		}
		return "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	return "other"
}
