package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// PruneReport says what a prune removed.
type PruneReport struct {
	Removed []string `json:"removed"`
	// Freed is the bytes of objects deleted; Left the bytes still held.
	Freed int64 `json:"freed"`
	Left  int64 `json:"left"`
}

// Prune removes snapshots taken before olderThan ago (when > 0), then the
// oldest ones until the objects take at most maxBytes (when > 0), then
// every object no snapshot names.
func (s *Store) Prune(olderThan time.Duration, maxBytes int64) (PruneReport, error) {
	var rep PruneReport
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return rep, err
	}
	defer unlock()
	snaps, err := s.List()
	if err != nil {
		return rep, err
	}
	sizes, err := s.objectSizes()
	if err != nil {
		return rep, err
	}
	cutoff := s.now().Add(-olderThan)
	var keep []Snapshot
	for _, snap := range snaps {
		if olderThan > 0 && snap.Time.Before(cutoff) {
			if err := s.drop(snap.ID); err != nil {
				return rep, err
			}
			rep.Removed = append(rep.Removed, snap.ID)
			continue
		}
		keep = append(keep, snap)
	}
	if maxBytes > 0 {
		for len(keep) > 0 && referenced(keep, sizes) > maxBytes {
			if err := s.drop(keep[0].ID); err != nil {
				return rep, err
			}
			rep.Removed = append(rep.Removed, keep[0].ID)
			keep = keep[1:]
		}
	}
	live := map[string]bool{}
	for _, snap := range keep {
		for _, f := range snap.Files {
			live[f.SHA256] = true
		}
	}
	err = filepath.WalkDir(filepath.Join(s.dir, "objects"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		name := d.Name()
		if live[name] {
			return nil
		}
		if strings.HasPrefix(name, ".incoming-") {
			// A copy in progress in another process: leave young ones.
			if fi, err := d.Info(); err != nil || time.Since(fi.ModTime()) < time.Hour {
				return nil
			}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		rep.Freed += sizes[name]
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("snapshot prune: %w", err)
	}
	sweepIncoming(filepath.Join(s.dir, "index"), time.Hour)
	if err := s.pruneOrphanRuns(); err != nil {
		return rep, err
	}
	rep.Left, err = s.count()
	s.mu.Lock()
	s.used = rep.Left
	s.mu.Unlock()
	return rep, err
}

func (s *Store) drop(id string) error {
	if err := os.Remove(s.indexPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("snapshot prune: %w", err)
	}
	if err := s.dropRun(id); err != nil {
		return fmt.Errorf("snapshot prune: %w", err)
	}
	return nil
}

// objectSizes maps each object's hash to its size on disk.
func (s *Store) objectSizes() (map[string]int64, error) {
	sizes := map[string]int64{}
	err := filepath.WalkDir(filepath.Join(s.dir, "objects"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if fi, err := d.Info(); err == nil {
			sizes[d.Name()] = fi.Size()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot store: %w", err)
	}
	return sizes, nil
}

// referenced adds up the objects the snapshots name, each once.
func referenced(snaps []Snapshot, sizes map[string]int64) int64 {
	seen := map[string]bool{}
	var n int64
	for _, snap := range snaps {
		for _, f := range snap.Files {
			if f.Exists && !seen[f.SHA256] {
				seen[f.SHA256] = true
				n += sizes[f.SHA256]
			}
		}
	}
	return n
}

// pruneOrphanRuns removes the run layers and kept originals of ids that
// have no index, once they are an hour old (a run being prepared writes
// its index right after its layers).
func (s *Store) pruneOrphanRuns() error {
	for _, dir := range []string{"runs", "sets"} {
		entries, err := os.ReadDir(filepath.Join(s.dir, dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("snapshot prune: %w", err)
		}
		for _, e := range entries {
			id := strings.TrimSuffix(e.Name(), ".lock")
			if !ValidID(id) {
				continue
			}
			if _, err := os.Lstat(s.indexPath(id)); err == nil {
				continue
			}
			if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < time.Hour {
				continue
			}
			if err := s.dropRun(id); err != nil {
				return fmt.Errorf("snapshot prune: %w", err)
			}
		}
	}
	return nil
}
