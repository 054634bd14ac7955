package changes

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// ErrTampered: a kept tree no longer matches what was recorded of it.
var ErrTampered = errors.New("a kept copy was modified")

// unbounded is the budget of walks that only record (hashing kept trees,
// saving what undo replaces): the person asked for them.
var unbounded = Budget{MaxEntries: math.MaxInt, MaxBeforeBytes: math.MaxInt64}

// keepName is where change i's Before tree is kept in the keep directory.
func keepName(i int) string { return strconv.Itoa(i) }

// Apply moves the set's changes from the upper layer into the workspace
// (set.Root). What each change replaces or deletes is first moved into
// the directory keep, as keep/<index of the change>: on one file system
// a whole tree costs one rename. Then the kept trees are hashed into
// set's Before entries, for [Verify]. All or nothing: after an error,
// what was applied is moved back. A path changed in the workspace after
// set.Started is an [ErrConflict].
func Apply(set *Set, upper, keep string) error {
	ufd, err := openRoot(upper)
	if err != nil {
		return err
	}
	defer unix.Close(ufd)
	rfd, err := openRoot(set.Root)
	if err != nil {
		return err
	}
	defer unix.Close(rfd)
	kfd, err := openRoot(keep)
	if err != nil {
		return err
	}
	defer unix.Close(kfd)
	var undo []func() error
	rollback := func(err error) error {
		var errs []error
		for _, f := range slices.Backward(undo) {
			if e := f(); e != nil {
				errs = append(errs, e)
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%w; moving back what was applied also failed: %w", err, errors.Join(errs...))
		}
		return err
	}
	for i, c := range set.Changes {
		if c.ModeOnly {
			continue
		}
		steps, err := applyOne(set, i, ufd, rfd, kfd)
		undo = append(undo, steps...)
		if err != nil {
			return rollback(fmt.Errorf("apply %s: %w", c.Path, err))
		}
	}
	for _, c := range slices.Backward(set.Changes) {
		if !c.ModeOnly {
			continue
		}
		c := c
		if err := chmodDir(rfd, c.Path, c.Before[0].Mode, c.After[0].Mode); err != nil {
			return rollback(fmt.Errorf("apply %s: %w", c.Path, err))
		}
		undo = append(undo, func() error { return chmodDir(rfd, c.Path, c.After[0].Mode, c.Before[0].Mode) })
	}
	for i := range set.Changes {
		c := &set.Changes[i]
		if c.ModeOnly || len(c.Before) == 0 {
			continue
		}
		w := &walker{budget: unbounded, hash: true}
		kept, err := w.tree(kfd, keepName(i), c.Path, true, nil)
		if err == nil && !sameShape(kept, c.Before) {
			err = fmt.Errorf("%w: %s changed while narrowd moved it", ErrConflict, c.Path)
		}
		if err != nil {
			return rollback(fmt.Errorf("keep %s: %w", c.Path, err))
		}
		c.Before = kept
	}
	return unix.Fsync(rfd)
}

// applyOne applies one change and returns the steps that move it back.
// A change that fails half way is moved back at once.
func applyOne(set *Set, i int, ufd, rfd, kfd int) ([]func() error, error) {
	c := set.Changes[i]
	dir, base := splitRel(c.Path)
	wdir, err := openDir(rfd, dir, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(wdir)
	if len(c.Before) > 0 {
		st, err := lstatAt(wdir, base)
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil, fmt.Errorf("%w: it is gone from the workspace", ErrConflict)
		case err != nil:
			return nil, err
		case time.Unix(st.Ctim.Unix()).After(set.Started):
			return nil, fmt.Errorf("%w: %s", ErrConflict, c.Path)
		}
		if err := move(wdir, base, kfd, keepName(i)); err != nil {
			return nil, err
		}
	}
	if len(c.After) > 0 {
		udir, err := openDir(ufd, dir, false)
		if err == nil {
			err = move(udir, base, wdir, base)
			unix.Close(udir)
			if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
				err = fmt.Errorf("%w: something else created it", ErrConflict)
			}
		}
		if err != nil {
			if len(c.Before) > 0 {
				if e := move(kfd, keepName(i), wdir, base); e != nil {
					return nil, fmt.Errorf("%w; moving the original back also failed: %w", err, e)
				}
			}
			return nil, err
		}
	}
	return reopenSteps(c, i, ufd, rfd, kfd), nil
}

// reopenSteps are the moves that take an applied change back out of the
// workspace, each opening its directories again.
func reopenSteps(c Change, i int, ufd, rfd, kfd int) []func() error {
	dir, base := splitRel(c.Path)
	var steps []func() error
	if len(c.Before) > 0 {
		steps = append(steps, func() error {
			wdir, err := openDir(rfd, dir, false)
			if err != nil {
				return err
			}
			defer unix.Close(wdir)
			return move(kfd, keepName(i), wdir, base)
		})
	}
	if len(c.After) > 0 {
		steps = append(steps, func() error {
			wdir, err := openDir(rfd, dir, false)
			if err != nil {
				return err
			}
			defer unix.Close(wdir)
			udir, err := openDir(ufd, dir, false)
			if err != nil {
				return err
			}
			defer unix.Close(udir)
			return move(wdir, base, udir, base)
		})
	}
	return steps
}

// chmodDir sets the mode of the directory rel (beneath rootfd) from was
// to mode; a directory whose mode is neither is left alone.
func chmodDir(rootfd int, rel string, was, mode uint32) error {
	fd, err := openDir(rootfd, rel, false)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if cur := st.Mode & 0o7777; cur != was && cur != mode {
		return fmt.Errorf("%w: its mode is now %o", ErrConflict, cur)
	}
	return unix.Fchmod(fd, mode)
}

// sameShape reports whether two lists describe the same nodes, hashes
// aside.
func sameShape(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Path != y.Path || x.Type != y.Type || x.Mode != y.Mode || x.Size != y.Size || x.Target != y.Target {
			return false
		}
	}
	return true
}

// Verify checks that keep holds exactly the Before trees of set, byte
// for byte: what [Undo] would put back.
func Verify(set Set, keep string) error { return verify(set, keep, false) }

// verify is Verify; interrupted accepts a change whose original was never
// moved into keep, and a kept tree not yet hashed (compared by shape).
func verify(set Set, keep string, interrupted bool) error {
	kfd, err := openRoot(keep)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTampered, err)
	}
	defer unix.Close(kfd)
	for i, c := range set.Changes {
		if c.ModeOnly || len(c.Before) == 0 {
			continue
		}
		if _, err := lstatAt(kfd, keepName(i)); interrupted && errors.Is(err, unix.ENOENT) {
			continue
		}
		w := &walker{budget: unbounded, hash: true}
		kept, err := w.tree(kfd, keepName(i), c.Path, true, nil)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrTampered, c.Path, err)
		}
		if interrupted && !hashed(c.Before) {
			if !sameShape(kept, c.Before) {
				return fmt.Errorf("%w: the copy of %s differs from what was kept", ErrTampered, c.Path)
			}
			continue
		}
		if !slices.Equal(kept, c.Before) {
			return fmt.Errorf("%w: the copy of %s differs from what was kept", ErrTampered, c.Path)
		}
	}
	return nil
}

// Undo puts the Before trees of an applied set back from keep, after
// [Verify]. Whatever is at each path now (the run's result, or what a
// person made since) is first moved into save, as save/<index>, and the
// set returned describes that: undoing it with save as its keep
// directory redoes the run. Parents that are gone are made again.
// Changes are handled one by one; the errors of those that fail are
// returned together and the others are still undone.
func Undo(set Set, keep, save string) (Set, error) { return undo(set, keep, save, false) }

// UndoInterrupted is [Undo] for a set whose [Apply] was cut short (the
// daemon died half way): a change whose original is not in keep was not
// applied and is left alone, and kept trees not yet hashed are checked
// by shape only.
func UndoInterrupted(set Set, keep, save string) (Set, error) { return undo(set, keep, save, true) }

// hashed reports whether every file of a tree has its hash.
func hashed(es []Entry) bool {
	for _, e := range es {
		if e.Type == "file" && e.SHA256 == "" {
			return false
		}
	}
	return true
}

func undo(set Set, keep, save string, interrupted bool) (Set, error) {
	inv := Set{Root: set.Root, Started: time.Now().UTC(), Changes: make([]Change, len(set.Changes))}
	if err := verify(set, keep, interrupted); err != nil {
		return inv, err
	}
	rfd, err := openRoot(set.Root)
	if err != nil {
		return inv, err
	}
	defer unix.Close(rfd)
	kfd, err := openRoot(keep)
	if err != nil {
		return inv, err
	}
	defer unix.Close(kfd)
	sfd, err := openRoot(save)
	if err != nil {
		return inv, err
	}
	defer unix.Close(sfd)
	var errs []error
	for i, c := range slices.Backward(set.Changes) {
		inv.Changes[i] = Change{Path: c.Path, ModeOnly: c.ModeOnly, After: c.Before}
		if c.ModeOnly {
			continue
		}
		if len(c.Before) == 0 && len(c.After) == 0 {
			continue // a change never applied, as an inverse records it
		}
		if _, err := lstatAt(kfd, keepName(i)); interrupted && len(c.Before) > 0 && errors.Is(err, unix.ENOENT) {
			inv.Changes[i].After = nil // never applied: nothing to redo
			continue
		}
		now, err := undoOne(c, i, rfd, kfd, sfd)
		inv.Changes[i].Before = now
		if err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %w", c.Path, err))
		}
	}
	for i, c := range set.Changes {
		if !c.ModeOnly {
			continue
		}
		inv.Changes[i].Before = c.After
		if err := chmodDir(rfd, c.Path, c.After[0].Mode, c.Before[0].Mode); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("undo %s: %w", c.Path, err))
		}
	}
	for i := range inv.Changes {
		inv.Changes[i].Action = action(inv.Changes[i].Before, inv.Changes[i].After)
	}
	return inv, errors.Join(errs...)
}

func undoOne(c Change, i int, rfd, kfd, sfd int) ([]Entry, error) {
	dir, base := splitRel(c.Path)
	wdir, err := openDir(rfd, dir, len(c.Before) > 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil // nothing there, and nothing to put back
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(wdir)
	var now []Entry
	if _, err := lstatAt(wdir, base); err == nil {
		w := &walker{budget: unbounded, hash: true}
		if now, err = w.tree(wdir, base, c.Path, true, nil); err != nil {
			return nil, fmt.Errorf("preserve what is there now: %w", err)
		}
		if err := move(wdir, base, sfd, keepName(i)); err != nil {
			return nil, fmt.Errorf("preserve what is there now: %w", err)
		}
	} else if !errors.Is(err, unix.ENOENT) {
		return nil, err
	}
	if len(c.Before) > 0 {
		if err := move(kfd, keepName(i), wdir, base); err != nil {
			return now, err
		}
	}
	return now, unix.Fsync(wdir)
}
