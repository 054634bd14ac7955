package changes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// beneath is the resolution of every open beneath a root: no symlink,
// no magic link, nothing outside.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func openRoot(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", dir, err)
	}
	return fd, nil
}

// openDir opens the directory rel beneath rootfd; with create, missing
// directories on the way are made (0755). "." is rootfd itself (a dup).
func openDir(rootfd int, rel string, create bool) (int, error) {
	if rel == "." || rel == "" {
		return unix.Dup(rootfd)
	}
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: beneath}
	cur, err := unix.Dup(rootfd)
	if err != nil {
		return -1, err
	}
	for _, part := range strings.Split(rel, "/") {
		next, err := unix.Openat2(cur, part, how)
		if errors.Is(err, unix.ENOENT) && create {
			if err := unix.Mkdirat(cur, part, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(cur)
				return -1, fmt.Errorf("mkdir %s: %w", rel, err)
			}
			next, err = unix.Openat2(cur, part, how)
		}
		unix.Close(cur)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR) {
				return -1, fmt.Errorf("%w: %s", ErrUnsafe, rel)
			}
			return -1, fmt.Errorf("open %s: %w", rel, err)
		}
		cur = next
	}
	return cur, nil
}

// names lists a directory's entries, sorted.
func names(dirfd int) ([]string, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	list, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(list)
	return list, nil
}

func lstatAt(dirfd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

func subdir(dirfd int, name string) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return -1, fmt.Errorf("%w: %s changed while narrowd read it", ErrUnsafe, name)
	}
	return fd, err
}

func readlinkAt(dirfd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// entryOf describes one node from its lstat; rel is its path. A node
// narrowd cannot recreate (device, socket) is ErrUnsupported.
func entryOf(dirfd int, name, rel string, st unix.Stat_t) (Entry, error) {
	e := Entry{Path: rel, Mode: st.Mode & 0o7777}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.Type, e.Size = "file", st.Size
	case unix.S_IFDIR:
		e.Type = "dir"
	case unix.S_IFLNK:
		t, err := readlinkAt(dirfd, name)
		if err != nil {
			return e, err
		}
		e.Type, e.Target = "symlink", t
	case unix.S_IFIFO:
		e.Type = "fifo"
	default:
		return e, fmt.Errorf("%w: %s is a device or socket", ErrUnsupported, rel)
	}
	return e, nil
}

// walker collects the entries of trees, counting them against a budget.
type walker struct {
	budget Budget
	// since, when set, makes a node changed after it a conflict.
	since   time.Time
	entries int
	bytes   int64
	// hash fills the SHA256 of files.
	hash bool
}

func (w *walker) add(e Entry, before bool) error {
	w.entries++
	if before {
		w.bytes += e.Size
	}
	if w.entries > w.budget.MaxEntries {
		return fmt.Errorf("%w: more than %d files and directories changed", ErrOverBudget, w.budget.MaxEntries)
	}
	if w.bytes > w.budget.MaxBeforeBytes {
		return fmt.Errorf("%w: more than %d bytes of workspace files replaced or deleted", ErrOverBudget, w.budget.MaxBeforeBytes)
	}
	return nil
}

// tree describes the node dirfd/name and, for a directory, everything
// beneath it, parents first; rel is the node's path.
func (w *walker) tree(dirfd int, name, rel string, before bool, out []Entry) ([]Entry, error) {
	st, err := lstatAt(dirfd, name)
	if err != nil {
		return out, err
	}
	if !w.since.IsZero() && time.Unix(st.Ctim.Unix()).After(w.since) {
		return out, fmt.Errorf("%w: %s", ErrConflict, rel)
	}
	e, err := entryOf(dirfd, name, rel, st)
	if err != nil {
		return out, err
	}
	if e.Type == "file" && w.hash {
		if e.SHA256, err = hashAt(dirfd, name, e.Size); err != nil {
			return out, fmt.Errorf("hash %s: %w", rel, err)
		}
	}
	if err := w.add(e, before); err != nil {
		return out, err
	}
	out = append(out, e)
	if e.Type != "dir" {
		return out, nil
	}
	fd, err := subdir(dirfd, name)
	if err != nil {
		return out, err
	}
	defer unix.Close(fd)
	list, err := names(fd)
	if err != nil {
		return out, err
	}
	for _, n := range list {
		if out, err = w.tree(fd, n, path.Join(rel, n), before, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// hashAt hashes the regular file dirfd/name, refusing one that is not
// exactly size bytes.
func hashAt(dirfd int, name string, size int64) (string, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, size+1))
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("the file is %d bytes, not %d", n, size)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// move renames src/sname to dst/dname, which must not exist. Across file
// systems it copies the tree and removes the source.
func move(src int, sname string, dst int, dname string) error {
	err := unix.Renameat2(src, sname, dst, dname, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EXDEV) {
		return err
	}
	if err := copyTree(src, sname, dst, dname); err != nil {
		removeTree(dst, dname)
		return err
	}
	return removeTree(src, sname)
}

// copyTree copies the node src/sname to dst/dname: files byte for byte
// (a reflink where the file system shares extents), modes, symlinks as
// symlinks, fifos.
func copyTree(src int, sname string, dst int, dname string) error {
	st, err := lstatAt(src, sname)
	if err != nil {
		return err
	}
	mode := st.Mode & 0o7777
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := unix.Mkdirat(dst, dname, 0o700); err != nil {
			return err
		}
		sfd, err := subdir(src, sname)
		if err != nil {
			return err
		}
		defer unix.Close(sfd)
		dfd, err := subdir(dst, dname)
		if err != nil {
			return err
		}
		defer unix.Close(dfd)
		list, err := names(sfd)
		if err != nil {
			return err
		}
		for _, n := range list {
			if err := copyTree(sfd, n, dfd, n); err != nil {
				return err
			}
		}
		return unix.Fchmod(dfd, mode)
	case unix.S_IFLNK:
		t, err := readlinkAt(src, sname)
		if err != nil {
			return err
		}
		return unix.Symlinkat(t, dst, dname)
	case unix.S_IFIFO:
		if err := unix.Mkfifoat(dst, dname, 0o600); err != nil {
			return err
		}
		return unix.Fchmodat(dst, dname, mode, 0)
	case unix.S_IFREG:
		return copyFile(src, sname, dst, dname, mode)
	}
	return fmt.Errorf("%w: %s is a device or socket", ErrUnsupported, sname)
}

func copyFile(src int, sname string, dst int, dname string, mode uint32) error {
	sfd, err := unix.Openat(src, sname, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	in := os.NewFile(uintptr(sfd), sname)
	defer in.Close()
	dfd, err := unix.Openat(dst, dname, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(dfd), dname)
	defer out.Close()
	if err := unix.IoctlFileClone(dfd, sfd); err != nil {
		if _, err := io.Copy(out, in); err != nil {
			return err
		}
	}
	if err := unix.Fchmod(dfd, mode); err != nil {
		return err
	}
	return out.Sync()
}

// removeTree removes the node dirfd/name and everything beneath it,
// following no symlink.
func removeTree(dirfd int, name string) error {
	st, err := lstatAt(dirfd, name)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(dirfd, name, 0)
	}
	fd, err := subdir(dirfd, name)
	if err != nil {
		return err
	}
	// A directory the run made unwritable must still be emptied.
	unix.Fchmod(fd, 0o700)
	list, err := names(fd)
	if err == nil {
		for _, n := range list {
			if err = removeTree(fd, n); err != nil {
				break
			}
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// RemoveAll removes dir and everything beneath it, following no symlink
// and emptying directories a run made unwritable (overlayfs leaves its
// work directory mode 0).
func RemoveAll(dir string) error {
	pfd, err := openRoot(filepath.Dir(dir))
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	return removeTree(pfd, filepath.Base(dir))
}

// splitRel returns the parent directory and base name of rel.
func splitRel(rel string) (dir, base string) {
	return path.Dir(rel), path.Base(rel)
}
