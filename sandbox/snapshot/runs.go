package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/narrowd/narrowd/sandbox/changes"
	"golang.org/x/sys/unix"
)

// A sandboxed run's changes (issue 16): the sandbox mounts an overlay
// over each writable root with its upper layer in the store
// (runs/<id>/<n>/upper), so the run cannot write the workspace itself.
// After it exits, [Store.FinishRun] reads the upper layer, moves the
// originals it replaces into sets/<id>/<n> and the run's files into the
// workspace, and records the change set in the index under the call's
// id; [Store.Restore] undoes it. A run over the budget, or one that
// changed a path something else changed meanwhile, is left pending: its
// changes are not in the workspace until [Store.ApplyRun], or dropped
// with [Store.DiscardRun].

// States of a [Run].
const (
	// RunRunning: the sandbox was built over the layers; its changes are
	// in the upper layer only.
	RunRunning = "running"
	// RunPending: the run ended and its changes were not applied (Why
	// says why); the upper layer is kept.
	RunPending = "pending"
	// RunApplied: the changes are in the workspace, the originals in the
	// store.
	RunApplied = "applied"
	// RunUndone: narrowd undo put the originals back.
	RunUndone = "undone"
	// RunDiscarded: the person dropped the pending changes.
	RunDiscarded = "discarded"
	// RunFailed: applying failed and was rolled back; the upper layer is
	// kept.
	RunFailed = "failed"
	// RunApplying: the changes were being applied when narrowd stopped;
	// narrowd undo puts back what was applied.
	RunApplying = "applying"
)

// ErrRunState: the run is not in a state that allows the operation.
var ErrRunState = errors.New("the run is not in that state")

// Run is one writable root's part of a sandboxed run.
type Run struct {
	changes.Set
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
}

// Layer is where the sandbox mounts one root's overlay.
type Layer struct {
	Root, Upper, Work string
}

func (s *Store) runDir(id string, n int) string {
	return filepath.Join(s.dir, "runs", id, strconv.Itoa(n))
}

func (s *Store) keepDir(id string, n int) string {
	return filepath.Join(s.dir, "sets", id, strconv.Itoa(n))
}

// PrepareRun makes the overlay layers for a run of call id over roots,
// started now, and records the run as running: from here on `narrowd
// apply ID` can reach its changes even if the daemon is gone.
func (s *Store) PrepareRun(id string, roots []string, started time.Time) ([]Layer, error) {
	if !ValidID(id) {
		return nil, ErrBadID
	}
	unlock, err := s.lock(unix.LOCK_SH)
	if err != nil {
		return nil, err
	}
	defer unlock()
	snap, err := s.Get(id)
	switch {
	case errors.Is(err, ErrNotFound):
		snap = Snapshot{ID: id, Time: s.now().UTC()}
	case err != nil:
		return nil, err
	case len(snap.Runs) > 0:
		return nil, fmt.Errorf("%w: call %s already has a run", ErrRunState, id)
	}
	var layers []Layer
	for n, root := range roots {
		root = filepath.Clean(root)
		if err := validRoot(root); err != nil {
			return nil, err
		}
		l := Layer{Root: root, Upper: filepath.Join(s.runDir(id, n), "upper"), Work: filepath.Join(s.runDir(id, n), "work")}
		for _, d := range []string{l.Upper, l.Work} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, fmt.Errorf("overlay layer: %w", err)
			}
		}
		layers = append(layers, l)
		snap.Runs = append(snap.Runs, Run{Set: changes.Set{Root: root, Started: started.UTC()}, State: RunRunning})
	}
	if err := s.writeIndex(snap); err != nil {
		return nil, err
	}
	return layers, nil
}

func validRoot(root string) error {
	if !filepath.IsAbs(root) || filepath.Clean(root) == "/" {
		return fmt.Errorf("%w: %s is no workspace root", ErrUnsafe, root)
	}
	return nil
}

// FinishRun applies what a run of call id left in its upper layers, each
// root on its own: within the budget and without a conflict, the
// changes go into the workspace with the originals kept; otherwise the
// run is left pending, its layers kept, and Why says why. It returns
// the snapshot as recorded.
func (s *Store) FinishRun(id string, b changes.Budget) (Snapshot, error) {
	return s.finish(id, b, false, RunRunning)
}

// ApplyRun applies a pending (or failed) run's changes at the person's
// request, whatever their size: the originals are still kept, so undo
// works. A path changed meanwhile in the workspace still refuses unless
// force is set (the person's version is then kept as an original).
func (s *Store) ApplyRun(id string, force bool) (Snapshot, error) {
	all := changes.Budget{MaxEntries: math.MaxInt, MaxBeforeBytes: math.MaxInt64}
	return s.finish(id, all, force, RunPending, RunFailed)
}

func (s *Store) finish(id string, b changes.Budget, force bool, from ...string) (Snapshot, error) {
	if !ValidID(id) {
		return Snapshot{}, ErrBadID
	}
	unlock, err := s.lock(unix.LOCK_SH)
	if err != nil {
		return Snapshot{}, err
	}
	defer unlock()
	// The daemon's FinishRun and a person's `narrowd apply` of the same
	// run must not both move its layers.
	unlockRun, err := s.lockRun(id)
	if err != nil {
		return Snapshot{}, err
	}
	defer unlockRun()
	snap, err := s.Get(id)
	if err != nil {
		return snap, err
	}
	touched := false
	for n := range snap.Runs {
		r := &snap.Runs[n]
		if !oneOf(r.State, from...) {
			continue
		}
		touched = true
		started := r.Started
		if force {
			// Paths changed meanwhile are replaced too; their versions
			// are kept as originals like the rest.
			started = s.now()
		}
		upper := filepath.Join(s.runDir(id, n), "upper")
		set, err := changes.Read(upper, r.Root, started, b)
		if err != nil {
			r.State, r.Why = RunPending, err.Error()
			continue
		}
		keep := s.keepDir(id, n)
		if err := os.MkdirAll(keep, 0o700); err != nil {
			return snap, err
		}
		// Recorded before anything moves: if narrowd dies half way,
		// narrowd undo still finds every original in keep.
		state, why := r.State, r.Why
		r.Set, r.State, r.Why = set, RunApplying, ""
		if err := s.writeIndex(snap); err != nil {
			r.State, r.Why = state, why
			return snap, err
		}
		if err := changes.Apply(&set, upper, keep); err != nil {
			r.State, r.Why = RunFailed, err.Error()
			if errors.Is(err, changes.ErrConflict) {
				r.State = RunPending
			}
			r.Changes = nil // rolled back: they are in the upper layer again
			continue
		}
		set.Started = r.Started
		r.Set, r.State, r.Why = set, RunApplied, ""
		if err := changes.RemoveAll(s.runDir(id, n)); err != nil {
			r.Why = "the emptied overlay layer could not be removed: " + err.Error()
		}
	}
	if !touched {
		return snap, fmt.Errorf("%w: call %s has no run to apply", ErrRunState, id)
	}
	if err := s.writeIndex(snap); err != nil {
		return snap, err
	}
	return snap, nil
}

// lockRun takes an exclusive flock on the run's own lock file, beside
// its layers.
func (s *Store) lockRun(id string) (func(), error) {
	dir := filepath.Join(s.dir, "runs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, id+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("run lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("run lock: %w", err)
	}
	return func() { f.Close() }, nil
}

func oneOf(s string, set ...string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

// DiscardRun drops a pending run's changes: its upper layers are
// removed, and the workspace stays as it is.
func (s *Store) DiscardRun(id string) (Snapshot, error) {
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return Snapshot{}, err
	}
	defer unlock()
	snap, err := s.Get(id)
	if err != nil {
		return snap, err
	}
	touched := false
	var errs []error
	for n := range snap.Runs {
		r := &snap.Runs[n]
		if !oneOf(r.State, RunPending, RunFailed, RunRunning) {
			continue
		}
		touched = true
		if err := changes.RemoveAll(s.runDir(id, n)); err != nil {
			errs = append(errs, err)
			continue
		}
		r.State, r.Why = RunDiscarded, "discarded by the person"
	}
	if !touched {
		return snap, fmt.Errorf("%w: call %s has no pending run", ErrRunState, id)
	}
	if err := s.writeIndex(snap); err != nil {
		errs = append(errs, err)
	}
	return snap, errors.Join(errs...)
}

// restoreRuns undoes the applied runs of snap: the originals go back,
// and what is there now is kept as a new snapshot (Of snap.ID) with the
// inverse runs, so the undo can be undone.
func (s *Store) restoreRuns(snap *Snapshot, rep *Report) error {
	saved := Snapshot{ID: NewID(), Time: s.now().UTC(), Of: snap.ID}
	var errs []error
	for n := range snap.Runs {
		r := &snap.Runs[n]
		if r.State != RunApplied && r.State != RunApplying {
			if r.State != RunUndone {
				rep.Files = append(rep.Files, Restored{Path: r.Root, Action: "unchanged", Was: "the run's changes were never applied (" + r.State + ")"})
			}
			continue
		}
		save := s.keepDir(saved.ID, len(saved.Runs))
		if err := os.MkdirAll(save, 0o700); err != nil {
			return err
		}
		undo := changes.Undo
		if r.State == RunApplying {
			undo = changes.UndoInterrupted
		}
		inv, err := undo(r.Set, s.keepDir(snap.ID, n), save)
		if errors.Is(err, changes.ErrTampered) {
			return fmt.Errorf("%w: %w", ErrTampered, err)
		}
		if err != nil {
			errs = append(errs, err)
		}
		for _, c := range inv.Changes {
			out := Restored{Path: filepath.Join(r.Root, c.Path), Action: "restored", Was: describeEntries(c.Before)}
			if len(c.After) == 0 {
				out.Action = "removed"
			}
			rep.Files = append(rep.Files, out)
		}
		saved.Runs = append(saved.Runs, Run{Set: inv, State: RunApplied})
		if r.State == RunApplying {
			// What was never applied goes with the layer.
			changes.RemoveAll(s.runDir(snap.ID, n))
		}
		r.State, r.Why = RunUndone, "undone; what undo replaced is snapshot "+saved.ID
	}
	if len(saved.Runs) > 0 {
		if err := s.writeIndex(saved); err != nil {
			errs = append(errs, err)
		} else {
			rep.Saved = saved.ID
		}
	}
	if err := s.writeIndex(*snap); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func describeEntries(es []changes.Entry) string {
	switch {
	case len(es) == 0:
		return "absent"
	case es[0].Type == "file":
		return "sha256:" + es[0].SHA256
	case es[0].Type == "symlink":
		return "symlink to " + es[0].Target
	case es[0].Type == "dir" && len(es) > 1:
		return fmt.Sprintf("directory of %d entries", len(es)-1)
	case es[0].Type == "dir":
		return "directory"
	}
	return es[0].Type
}

// validRuns refuses an index whose runs would steer narrowd outside a
// workspace root.
func validRuns(snap Snapshot) error {
	for _, r := range snap.Runs {
		if err := validRoot(r.Root); err != nil {
			return err
		}
		for _, c := range r.Changes {
			if !filepath.IsLocal(c.Path) || filepath.Clean(c.Path) != c.Path || c.Path == "." {
				return fmt.Errorf("%w: %s is not beneath %s", ErrUnsafe, c.Path, r.Root)
			}
			for _, side := range [][]changes.Entry{c.Before, c.After} {
				for _, e := range side {
					if rel, err := filepath.Rel(c.Path, e.Path); err != nil || !filepath.IsLocal(rel) {
						return fmt.Errorf("%w: %s is not beneath %s", ErrUnsafe, e.Path, c.Path)
					}
				}
			}
		}
	}
	return nil
}

// dropRun removes what a snapshot's runs hold in the store.
func (s *Store) dropRun(id string) error {
	var errs []error
	os.Remove(filepath.Join(s.dir, "runs", id+".lock"))
	for _, d := range []string{filepath.Join(s.dir, "runs", id), filepath.Join(s.dir, "sets", id)} {
		if _, err := os.Lstat(d); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := changes.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Preview returns snapshot id with the changes of its runs that are not
// applied read from their overlay layers (nothing is applied), for
// `narrowd show`. A layer that cannot be read leaves that run's Why
// saying so.
func (s *Store) Preview(id string) (Snapshot, error) {
	snap, err := s.Get(id)
	if err != nil {
		return snap, err
	}
	all := changes.Budget{MaxEntries: math.MaxInt, MaxBeforeBytes: math.MaxInt64}
	for n := range snap.Runs {
		r := &snap.Runs[n]
		if !oneOf(r.State, RunRunning, RunPending, RunFailed) {
			continue
		}
		set, err := changes.Read(filepath.Join(s.runDir(id, n), "upper"), r.Root, time.Time{}, all)
		if err != nil {
			r.Why = strings.TrimSpace(r.Why + "; its overlay does not read: " + err.Error())
			continue
		}
		r.Changes = set.Changes
	}
	return snap, nil
}
