package proofs

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/rules"
)

// A recursive read that follows symbolic links (grep -R, rg -L, du -L,
// zip -r, diff -r) reaches whatever the links in its tree point to, and
// that is known only by looking. narrowd walks the tree itself, within
// a budget: a link found leaving the workspace is point-in-time evidence
// and raises; a tree it could not walk completely (no disk, too many
// entries, too deep, unreadable) keeps the call at its ceiling, since
// not having looked proves nothing.

// Walk budgets: the entries one call may have walked, over all its
// trees (about 3 µs each on a warm cache), and the deepest directory.
// A larger or deeper tree is not walked.
const (
	walkMaxEntries = 10000
	walkMaxDepth   = 64
)

// DirReader is the part of a [Disk] that lists directories, needed to
// walk a tree. [OSDisk] has it; a Disk without it walks nothing.
type DirReader interface {
	ReadDir(name string) ([]fs.DirEntry, error)
}

// walkResult is what walking one tree found.
type walkResult struct {
	// walked reports that the whole tree was seen within the budget.
	walked bool
	// why says why it was not walked, or which link leaves the
	// workspace (escape).
	why    string
	escape bool
	// entries counts what was seen.
	entries int
}

// WalkFollowing walks the tree under w, an inside path, as a reader that
// follows every symbolic link does: into each directory a link names,
// wherever it is. It reports the first link whose target leaves the
// workspace, or that the tree was not walked.
// budget is what is left of the call's entries, and is spent.
func (ps Paths) walkFollowing(w Where, budget *int) walkResult {
	dr, ok := ps.Disk.(DirReader)
	if ps.Disk == nil || !ok {
		return walkResult{why: "narrowd reads no disk here"}
	}
	if !w.Inside {
		return walkResult{why: "not inside the workspace"}
	}
	start, why := ps.resolveLinks(w.Abs)
	if why != "" {
		return walkResult{walked: true, escape: true, why: why}
	}
	type dir struct {
		path  string
		depth int
	}
	res := walkResult{}
	visited := map[string]bool{}
	queue := []dir{{start, 0}}
	fi, err := ps.Disk.Lstat(start)
	if err != nil || !fi.IsDir() {
		// A file or nothing: the path proofs already checked it.
		return walkResult{walked: true}
	}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if visited[d.path] {
			continue
		}
		visited[d.path] = true
		if d.depth > walkMaxDepth {
			res.why = fmt.Sprintf("the tree is deeper than %d directories", walkMaxDepth)
			return res
		}
		entries, err := dr.ReadDir(d.path)
		if err != nil {
			res.why = "cannot list " + d.path + ": " + err.Error()
			return res
		}
		for _, e := range entries {
			res.entries++
			if *budget--; *budget < 0 {
				res.why = fmt.Sprintf("the trees have more than %d entries", walkMaxEntries)
				return res
			}
			name := filepath.Join(d.path, e.Name())
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				target, why := ps.resolveLinks(name)
				if why != "" {
					return walkResult{walked: true, escape: true, why: why, entries: res.entries}
				}
				if fi, err := ps.Disk.Lstat(target); err == nil && fi.IsDir() {
					queue = append(queue, dir{target, d.depth + 1})
				}
			case e.IsDir():
				queue = append(queue, dir{name, d.depth + 1})
			}
		}
	}
	res.walked = true
	return res
}

// resolveLinks follows every symbolic link on the way to abs, component
// by component, and returns where it ends, or why it leaves the
// workspace. A missing component ends the walk where it is: nothing
// there can be read.
func (ps Paths) resolveLinks(abs string) (string, string) {
	for hops := 0; hops <= 40; hops++ {
		w := ps.Resolve("/", abs)
		if !w.Inside {
			return "", fmt.Sprintf("a symlink leads to %s, outside the workspace", abs)
		}
		rel, err := filepath.Rel(w.Root, w.Abs)
		if err != nil {
			return "", "cannot place " + abs
		}
		cur := w.Root
		next := ""
		if rel != "." {
			parts := strings.Split(rel, "/")
			for i, part := range parts {
				cur = filepath.Join(cur, part)
				fi, err := ps.Disk.Lstat(cur)
				if err != nil {
					return w.Abs, ""
				}
				if fi.Mode()&fs.ModeSymlink == 0 {
					continue
				}
				target, err := ps.Disk.Readlink(cur)
				if err != nil {
					return "", fmt.Sprintf("symlink %s cannot be read", cur)
				}
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(cur), target)
				}
				next = filepath.Join(append([]string{filepath.Clean(target)}, parts[i+1:]...)...)
				break
			}
		}
		if next == "" {
			return w.Abs, ""
		}
		if !ps.Resolve("/", next).Inside {
			return "", fmt.Sprintf("symlink %s points outside the workspace", cur)
		}
		abs = next
	}
	return "", "too many symlinks under " + abs
}

// followedTrees walks each inside tree that p reads through its
// symbolic links. It reports false when one could not be walked, and
// raises on a link that leaves the workspace. Trees outside are left to
// the path proofs, which keep their scope at the ceiling.
func followedTrees(c *claims, p parse.Program, cwd string, ps Paths, budget *int) bool {
	ok := true
	for _, pa := range p.Paths {
		if !pa.Recursive || !pa.Follows || !pa.Word.Literal {
			continue
		}
		w := ps.Resolve(cwd, pa.Word.Value)
		if !w.Inside {
			continue
		}
		r := ps.walkFollowing(w, budget)
		switch {
		case r.escape:
			c.add(rules.KindLinkEscape, rules.PointInTime, pa.Word.Value, r.why+"; "+p.Name+" follows it", raise(rules.Scope))
		case !r.walked:
			c.add(rules.KindUnproven, rules.Proven, "symbolic links not walked", fmt.Sprintf("%s follows symbolic links under %s and narrowd did not walk the tree: %s", p.Name, w.Abs, r.why), effectNone)
			ok = false
		default:
			c.add(rules.KindLinksWalked, rules.PointInTime, pa.Word.Value, fmt.Sprintf("walked %d entries under %s: no symbolic link leaves the workspace", r.entries, w.Abs), effectNone)
		}
	}
	return ok
}

// dotDotAfterName reports a path in which ".." follows a name: the
// kernel climbs from wherever a symlink before it points (l/../x with l
// a link is beside the link's target), not from the name's directory as
// lexical cleaning does.
func dotDotAfterName(p string) bool {
	name := false
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if name {
				return true
			}
		default:
			name = true
		}
	}
	return false
}

// physicalPath resolves abs, an absolute path as written (not cleaned),
// the way the kernel does: component by component, a symlink replaced
// by its target and ".." taken from where the walk really is. ok is
// false when a component does not exist or the links are too many: then
// nothing there can be opened through this path (a new file's
// directory must exist).
func (ps Paths) physicalPath(abs string, hops *int) (string, bool) {
	cur := "/"
	segs := strings.Split(abs, "/")
	for i, seg := range segs {
		switch seg {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, seg)
		fi, err := ps.Disk.Lstat(next)
		if err != nil {
			// A missing last component is a file to be created in
			// cur; a missing directory fails the open.
			return next, i == len(segs)-1
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if *hops++; *hops > 40 {
			return "", false
		}
		target, err := ps.Disk.Readlink(next)
		if err != nil {
			return "", false
		}
		if !filepath.IsAbs(target) {
			target = cur + "/" + target
		}
		resolved, ok := ps.physicalPath(target, hops)
		if !ok {
			return "", false
		}
		cur = resolved
	}
	return cur, true
}

// rawRaises checks a path whose ".." follows a name against the disk:
// lexically it stays inside, but a symlink before the ".." can take it
// anywhere (cat l/../notes.txt reads beside l's target). Found outside,
// it raises as point-in-time evidence, like any link that leaves.
func rawRaises(c *claims, ps Paths, cwd, name string) {
	if ps.Disk == nil || !dotDotAfterName(name) {
		return
	}
	abs := name
	if !filepath.IsAbs(abs) {
		abs = cwd + "/" + name
	}
	hops := 0
	real, ok := ps.physicalPath(abs, &hops)
	if !ok {
		return
	}
	if w := ps.Resolve("/", real); !w.Inside {
		c.add(rules.KindLinkEscape, rules.PointInTime, name, "a symlink before .. takes the path to "+real+", outside the workspace", raise(rules.Scope))
	}
}
