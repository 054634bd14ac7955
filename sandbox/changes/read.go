package changes

import (
	"errors"
	"fmt"
	"path"
	"time"

	"golang.org/x/sys/unix"
)

// overlayXattr names an overlayfs xattr under both prefixes: user.* for
// the unprivileged (userxattr) mount narrowd makes, trusted.* for one a
// real root made.
func overlayXattr(fd int, name string) (string, bool) {
	for _, prefix := range []string{"user.overlay.", "trusted.overlay."} {
		buf := make([]byte, 256)
		n, err := unix.Fgetxattr(fd, prefix+name, buf)
		if err == nil {
			return string(buf[:n]), true
		}
	}
	return "", false
}

// refused are the overlay xattrs that mean the upper node is not the
// whole truth: its data or its name is elsewhere (metacopy,
// redirect_dir), or it is a whiteout of another kind. narrowd mounts
// with neither feature, so finding one means the layer is not what it
// made: nothing is applied. (origin and impure only record where a
// copied-up node came from.)
var refused = []string{"metacopy", "redirect", "whiteout"}

// checkUpperNode refuses an upper node that carries an overlay xattr
// narrowd does not read.
func checkUpperNode(dirfd int, name, rel string, st unix.Stat_t) (opaque bool, err error) {
	typ := st.Mode & unix.S_IFMT
	if typ != unix.S_IFREG && typ != unix.S_IFDIR {
		// Symlinks and fifos cannot be opened to read xattrs without
		// following them or blocking; overlayfs stores none narrowd
		// would need on them with redirect_dir and metacopy off.
		return false, nil
	}
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if err != nil {
		return false, fmt.Errorf("read %s in the upper layer: %w", rel, err)
	}
	defer unix.Close(fd)
	for _, x := range refused {
		if _, ok := overlayXattr(fd, x); ok {
			return false, fmt.Errorf("%w: %s has the overlay attribute %s", ErrUnsupported, rel, x)
		}
	}
	v, ok := overlayXattr(fd, "opaque")
	switch {
	case !ok:
		return false, nil
	case typ == unix.S_IFDIR && v == "y":
		return true, nil
	}
	return false, fmt.Errorf("%w: %s has the overlay attribute opaque=%q", ErrUnsupported, rel, v)
}

func isWhiteout(st unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// Read compares the overlay upper layer upper with the workspace root it
// was mounted over and returns the run's changes, in an order that
// applies them (parents first). since is when the run started: a path
// the run replaces or deletes that changed in the workspace after it is
// an [ErrConflict] (the run itself cannot write the workspace, so
// something else did). Read changes nothing. An error means the set
// must not be applied; with [ErrOverBudget] or [ErrConflict] the upper
// layer is still whole and may be applied later.
func Read(upper, root string, since time.Time, b Budget) (Set, error) {
	set := Set{Root: root, Started: since}
	ufd, err := openRoot(upper)
	if err != nil {
		return set, err
	}
	defer unix.Close(ufd)
	rfd, err := openRoot(root)
	if err != nil {
		return set, err
	}
	defer unix.Close(rfd)
	w := &walker{budget: b.Filled(), since: since}
	err = w.dir(ufd, rfd, ".", &set)
	return set, err
}

func (w *walker) dir(ufd, lfd int, rel string, set *Set) error {
	list, err := names(ufd)
	if err != nil {
		return err
	}
	for _, n := range list {
		p := path.Join(rel, n)
		ust, err := lstatAt(ufd, n)
		if err != nil {
			return err
		}
		lst, lerr := lstatAt(lfd, n)
		lower := lerr == nil
		if lerr != nil && !errors.Is(lerr, unix.ENOENT) {
			return fmt.Errorf("workspace %s: %w", p, lerr)
		}
		var c Change
		c.Path = p
		if isWhiteout(ust) {
			if !lower {
				continue
			}
			if c.Before, err = w.tree(lfd, n, p, true, nil); err != nil {
				return err
			}
			c.Action = Deleted
			set.Changes = append(set.Changes, c)
			continue
		}
		opaque, err := checkUpperNode(ufd, n, p, ust)
		if err != nil {
			return err
		}
		if ust.Mode&unix.S_IFMT == unix.S_IFDIR && lower && lst.Mode&unix.S_IFMT == unix.S_IFDIR && !opaque {
			// A directory both layers have: its entries merge.
			if ust.Mode&0o7777 != lst.Mode&0o7777 {
				c.Action, c.ModeOnly = Changed, true
				c.Before = []Entry{{Path: p, Type: "dir", Mode: lst.Mode & 0o7777}}
				c.After = []Entry{{Path: p, Type: "dir", Mode: ust.Mode & 0o7777}}
				if err := w.add(c.After[0], false); err != nil {
					return err
				}
				set.Changes = append(set.Changes, c)
			}
			if err := w.merge(ufd, lfd, n, p, set); err != nil {
				return err
			}
			continue
		}
		if lower {
			if c.Before, err = w.tree(lfd, n, p, true, nil); err != nil {
				return err
			}
		}
		if c.After, err = w.upperTree(ufd, n, p, nil); err != nil {
			return err
		}
		c.Action = action(c.Before, c.After)
		set.Changes = append(set.Changes, c)
	}
	return nil
}

func (w *walker) merge(ufd, lfd int, name, rel string, set *Set) error {
	u, err := subdir(ufd, name)
	if err != nil {
		return err
	}
	defer unix.Close(u)
	l, err := subdir(lfd, name)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", rel, err)
	}
	defer unix.Close(l)
	return w.dir(u, l, rel, set)
}

// upperTree is tree for a node of the upper layer that replaces the
// workspace's: every node in it is checked for overlay attributes, and a
// whiteout or device inside is unsupported.
func (w *walker) upperTree(dirfd int, name, rel string, out []Entry) ([]Entry, error) {
	st, err := lstatAt(dirfd, name)
	if err != nil {
		return out, err
	}
	if _, err := checkUpperNode(dirfd, name, rel, st); err != nil {
		return out, err
	}
	e, err := entryOf(dirfd, name, rel, st)
	if err != nil {
		return out, err
	}
	if err := w.add(e, false); err != nil {
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
		if out, err = w.upperTree(fd, n, path.Join(rel, n), out); err != nil {
			return out, err
		}
	}
	return out, nil
}
