package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

type object struct {
	sum     string
	size    int64
	reflink bool
}

// store copies src into the store as an object: a reflink where the file
// system allows it, else a copy of at most limit bytes. The hash is of
// the copy, never of the source, which may change while it is read.
func (s *Store) store(src *os.File, limit int64) (object, error) {
	dir := filepath.Join(s.dir, "objects")
	tmp, err := os.CreateTemp(dir, ".incoming-*")
	if err != nil {
		return object{}, err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	obj, err := copyInto(tmp, src, limit)
	if err != nil {
		return object{}, err
	}
	if err := tmp.Chmod(0o400); err != nil {
		return object{}, err
	}
	if err := tmp.Sync(); err != nil {
		return object{}, err
	}
	final := s.objectPath(obj.sum)
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return object{}, err
	}
	if _, err := os.Lstat(final); err == nil {
		// The same bytes are already held. Touch the object so a prune
		// running beside a slow take sees it as in use.
		now := time.Now()
		_ = os.Chtimes(final, now, now)
		return obj, nil
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return object{}, err
	}
	if err := syncDir(filepath.Dir(final)); err != nil {
		return object{}, err
	}
	return obj, nil
}

// copyInto fills dst with src's bytes and returns their hash, read back
// from dst after a reflink and hashed on the way for a copy.
func copyInto(dst, src *os.File, limit int64) (object, error) {
	h := sha256.New()
	if err := unix.IoctlFileClone(int(dst.Fd()), int(src.Fd())); err == nil {
		n, err := io.Copy(h, io.LimitReader(dst, limit+1))
		if err != nil {
			return object{}, err
		}
		if n > limit {
			return object{}, fmt.Errorf("%w: the file grew past %d bytes", ErrOverBudget, limit)
		}
		return object{sum: hex.EncodeToString(h.Sum(nil)), size: n, reflink: true}, nil
	} else if !cloneUnsupported(err) {
		return object{}, fmt.Errorf("reflink: %w", err)
	}
	n, err := io.Copy(io.MultiWriter(dst, h), io.LimitReader(src, limit+1))
	if err != nil {
		return object{}, err
	}
	if n > limit {
		return object{}, fmt.Errorf("%w: the file grew past %d bytes", ErrOverBudget, limit)
	}
	return object{sum: hex.EncodeToString(h.Sum(nil)), size: n}, nil
}

// cloneUnsupported reports the errors FICLONE gives when the file system
// (or the pair of them) cannot share extents: then a copy is right.
func cloneUnsupported(err error) bool {
	for _, e := range []error{unix.EXDEV, unix.EOPNOTSUPP, unix.EINVAL, unix.ENOTTY, unix.ENOSYS, unix.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// verify re-hashes a stored object.
func (s *Store) verify(f File) error {
	o, err := os.Open(s.objectPath(f.SHA256))
	if err != nil {
		return fmt.Errorf("%w: the copy of %s is gone: %w", ErrTampered, f.Path, err)
	}
	defer o.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(o, f.Size+1))
	if err != nil {
		return fmt.Errorf("read the copy of %s: %w", f.Path, err)
	}
	if n != f.Size || hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
		return fmt.Errorf("%w: the copy of %s no longer has hash %s", ErrTampered, f.Path, f.SHA256)
	}
	return nil
}
