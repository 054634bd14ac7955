// Package changes reads what a sandboxed run changed in a workspace from
// the upper layer of the overlay narrowd mounted over it, and moves trees
// between the workspace, that upper layer and narrowd's snapshot store
// without ever following a symlink.
//
// Inside the sandbox each writable root is an overlayfs (lowerdir the
// real workspace, upperdir and workdir in narrowd's state directory, the
// userxattr option of an unprivileged mount): the run cannot write the
// real workspace at all. After it exits, [Read] compares the upper layer
// with the workspace and returns the run's [Change]s: a regular file,
// symlink or fifo in the upper layer replaces whatever was at its path; a
// character device 0/0 (a whiteout) deletes it, a whole tree included; a
// directory marked opaque (xattr user.overlay.opaque) or new replaces the
// tree there; any other directory merges, and only its own mode may have
// changed. Renames show as a delete and a create (redirect_dir is off).
// Anything [Read] cannot put back byte for byte (devices, sockets,
// metacopy or redirect xattrs, a file whose data is still in the lower
// layer) makes the whole set [ErrUnsupported], and nothing is applied.
//
// Every path is opened beneath its root with openat2 (RESOLVE_BENEATH,
// RESOLVE_NO_SYMLINKS) and every leaf is handled with *at calls that do
// not follow it, so a symlink the run planted is moved as a symlink.
//
// The package is pure Go and x/sys/unix; the snapshot store
// (sandbox/snapshot) decides where trees are kept.
package changes

import (
	"errors"
	"time"
)

// Errors a caller tells apart.
var (
	// ErrUnsupported: the upper layer holds something narrowd cannot put
	// back byte for byte.
	ErrUnsupported = errors.New("the run made a change narrowd cannot undo")
	// ErrConflict: a path the run changed was also changed in the real
	// workspace, by something else, after the run started.
	ErrConflict = errors.New("changed in the workspace during the run")
	// ErrOverBudget: the run changed more than the undo budget allows.
	ErrOverBudget = errors.New("over the undo budget")
	// ErrUnsafe: a symlink or a non-directory is where a directory must be.
	ErrUnsafe = errors.New("a symlink or file is on the way")
)

// Entry is one node of a tree: a file, directory, symlink or fifo. Its
// Path is relative to the workspace root.
type Entry struct {
	Path string `json:"path"`
	// Type is "file", "dir", "symlink" or "fifo".
	Type string `json:"type"`
	// Mode is the permission bits (with setuid, setgid and sticky).
	Mode   uint32 `json:"mode"`
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Target string `json:"target,omitempty"`
}

// Change is what the run did at one path. Before is what was there (a
// whole tree, parents first) and After what the run left; a created path
// has no Before, a deleted one no After. A merged directory whose own
// mode changed has ModeOnly set and one entry on each side.
type Change struct {
	Path     string  `json:"path"`
	Action   string  `json:"action"`
	ModeOnly bool    `json:"mode_only,omitempty"`
	Before   []Entry `json:"before,omitempty"`
	After    []Entry `json:"after,omitempty"`
}

// Actions of a [Change].
const (
	Created = "created"
	Changed = "changed"
	Deleted = "deleted"
)

func action(before, after []Entry) string {
	switch {
	case len(before) == 0:
		return Created
	case len(after) == 0:
		return Deleted
	}
	return Changed
}

// Budget bounds what one run may change and still be applied with an
// undo: entries on both sides, and the bytes of what it replaces or
// deletes (which the store keeps).
type Budget struct {
	MaxEntries     int
	MaxBeforeBytes int64
}

// Defaults for [Budget]: moving a tree into the store costs one rename,
// but each kept file is hashed (about 1-2 ms per MiB) so that undo can
// tell a tampered store.
const (
	DefaultMaxEntries     = 50_000
	DefaultMaxBeforeBytes = 512 << 20
)

// Filled returns b with its zero fields set to the defaults.
func (b Budget) Filled() Budget {
	if b.MaxEntries <= 0 {
		b.MaxEntries = DefaultMaxEntries
	}
	if b.MaxBeforeBytes <= 0 {
		b.MaxBeforeBytes = DefaultMaxBeforeBytes
	}
	return b
}

// Set is a run's changes beneath one root.
type Set struct {
	Root    string    `json:"root"`
	Started time.Time `json:"started"`
	Changes []Change  `json:"changes"`
}

// Count returns the entries on both sides and the bytes of Before.
func (s Set) Count() (entries int, beforeBytes, afterBytes int64) {
	for _, c := range s.Changes {
		entries += len(c.Before) + len(c.After)
		for _, e := range c.Before {
			beforeBytes += e.Size
		}
		for _, e := range c.After {
			afterBytes += e.Size
		}
	}
	return entries, beforeBytes, afterBytes
}
