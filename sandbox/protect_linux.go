//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
)

// Protection is what [Protect] found in the writable roots.
type Protection struct {
	// ReadOnly are the existing protected paths, mounted read-only in
	// the sandbox (none beneath another).
	ReadOnly []string `json:"read_only,omitempty"`
	// Anchors are the existing directories between a writable root and a
	// protected path. Each is mounted on itself, so that it cannot be
	// renamed or removed (a mount point is busy): otherwise a build could
	// move .github aside and make a new .github/workflows beside it.
	Anchors []string `json:"anchors,omitempty"`
	// Watch are protected paths that a mount cannot cover: they do not
	// exist yet and no protected directory holds them (.envrc, a missing
	// .vscode), or they are symlinks. [Sandbox.Wait] looks at them again
	// after the run and moves aside what the run made of them.
	Watch []Watched `json:"watch,omitempty"`
}

// Watched is a protected path and what it was when the sandbox started.
type Watched struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	Dev    uint64 `json:"dev,omitempty"`
	Ino    uint64 `json:"ino,omitempty"`
}

// Protect computes the protected paths of the writable roots (absolute
// and clean, their symlinks resolved) for patterns relative to each root,
// and own, narrowd's own absolute paths (protected where they lie in a
// root). A pattern protects its longest literal prefix: ".git",
// ".github/workflows/*.yml" protects .github/workflows; a leading "**/"
// protects the rest at the root here, and at any depth where the
// hard-link walk of [Start] finds it ([Protection.matchDeep]). A .git
// file (a worktree's or submodule's gitfile) protects the directory it
// names too, when that lies in a root. It only reads the file system.
func Protect(roots, patterns, own []string) (Protection, error) {
	var p Protection
	for _, root := range roots {
		for _, pat := range patterns {
			pat = strings.TrimPrefix(filepath.ToSlash(pat), "**/")
			lit := literalPrefix(pat)
			if lit == "" {
				continue
			}
			if err := p.add(root, filepath.Join(root, filepath.FromSlash(lit)), 0); err != nil {
				return p, err
			}
		}
		for _, o := range own {
			if o = filepath.Clean(o); filepath.IsAbs(o) && within(o, root) && o != root {
				if err := p.add(root, o, 0); err != nil {
					return p, err
				}
			}
		}
	}
	p.normalize()
	return p, nil
}

// literalPrefix is the part of a slash-separated pattern before its first
// component with a glob metacharacter, cleaned; "" when there is none or
// it would leave the root.
func literalPrefix(pat string) string {
	var lit []string
	for _, c := range strings.Split(pat, "/") {
		if strings.ContainsAny(c, `*?[{\`) {
			break
		}
		lit = append(lit, c)
	}
	s := filepath.ToSlash(filepath.Clean(strings.Join(lit, "/")))
	if s == "." || s == ".." || strings.HasPrefix(s, "../") || strings.HasPrefix(s, "/") {
		return ""
	}
	return s
}

// add protects path, which lies beneath root. depth bounds the gitfile
// and symlink chains.
func (p *Protection) add(root, path string, depth int) error {
	if depth > 4 {
		return nil
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		p.Watch = append(p.Watch, Watched{Path: path})
		p.anchor(root, filepath.Dir(path))
		return nil
	case err != nil:
		return fmt.Errorf("protected path %s: %w", path, err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if fi.Mode()&fs.ModeSymlink != 0 {
		// A mount cannot cover a symlink: watch the name, protect the
		// target where it is ours to protect.
		w := Watched{Path: path, Exists: true}
		if st != nil {
			w.Dev, w.Ino = st.Dev, st.Ino
		}
		p.Watch = append(p.Watch, w)
		p.anchor(root, filepath.Dir(path))
		if target, err := filepath.EvalSymlinks(path); err == nil && within(target, root) && target != root {
			return p.add(root, target, depth+1)
		}
		return nil
	}
	// The parents of path may be symlinks themselves: protect the real
	// place, and watch the name if it moved.
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("protected path %s: %w", path, err)
	}
	if real != path {
		p.Watch = append(p.Watch, Watched{Path: path, Exists: true, Dev: st.Dev, Ino: st.Ino})
		if !within(real, root) || real == root {
			return nil
		}
		path = real
	}
	p.ReadOnly = append(p.ReadOnly, path)
	p.anchor(root, filepath.Dir(path))
	if filepath.Base(path) == ".git" && fi.Mode().IsRegular() {
		if dir, ok := gitfileTarget(path); ok && within(dir, root) && dir != root {
			return p.add(root, dir, depth+1)
		}
	}
	return nil
}

// anchor adds the existing directories from dir up to (not including)
// root.
func (p *Protection) anchor(root, dir string) {
	for ; dir != root && within(dir, root); dir = filepath.Dir(dir) {
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
			p.Anchors = append(p.Anchors, dir)
		}
	}
}

// gitfileTarget reads a gitfile ("gitdir: PATH") and returns the
// directory it names, made absolute against the file's directory.
func gitfileTarget(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", false
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(path), dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", false
	}
	return real, true
}

// matchDeep reports whether rel (slash-separated, relative to a root)
// matches one of the patterns that start with "**/".
func matchDeep(patterns []string, rel string) bool {
	for _, pat := range patterns {
		if strings.HasPrefix(pat, "**/") {
			if ok, _ := doublestar.Match(pat, rel); ok {
				return true
			}
		}
	}
	return false
}

// normalize sorts and deduplicates, keeps the outermost read-only paths
// and drops anchors and watched paths a read-only path covers.
func (p *Protection) normalize() {
	p.ReadOnly = outermost(p.ReadOnly)
	covered := func(path string) bool {
		for _, r := range p.ReadOnly {
			if within(path, r) {
				return true
			}
		}
		return false
	}
	var anchors []string
	for _, a := range slices.Compact(slices.Sorted(slices.Values(p.Anchors))) {
		if !covered(a) && !slices.Contains(p.ReadOnly, a) {
			anchors = append(anchors, a)
		}
	}
	p.Anchors = anchors
	var watch []Watched
	for _, w := range p.Watch {
		if !covered(w.Path) && !slices.ContainsFunc(watch, func(x Watched) bool { return x.Path == w.Path }) {
			watch = append(watch, w)
		}
	}
	p.Watch = watch
}

// covers reports whether path is or lies beneath a read-only path.
func (p *Protection) covers(path string) bool {
	for _, r := range p.ReadOnly {
		if within(path, r) {
			return true
		}
	}
	return false
}

// refusedSuffix is added to a protected path the run created: the
// name no longer loads (direnv, editors, CI read only the real name).
const refusedSuffix = ".narrowd-refused"

// checkWatched looks at the watched paths after the run. Each that the
// run created or replaced is renamed NAME.narrowd-refused[-N] (so that
// nothing loads it later, and the person can look at it), and one line
// on stderr names it. It returns the paths it moved.
func checkWatched(watch []Watched, stderr io.Writer) []string {
	var moved []string
	for _, w := range watch {
		fi, err := os.Lstat(w.Path)
		if err != nil {
			continue // gone or never made: nothing loads
		}
		if w.Exists {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Dev == w.Dev && st.Ino == w.Ino {
				continue
			}
		}
		to := w.Path + refusedSuffix
		for n := 2; exists(to) && n < 100; n++ {
			to = fmt.Sprintf("%s%s-%d", w.Path, refusedSuffix, n)
		}
		if err := os.Rename(w.Path, to); err != nil {
			fmt.Fprintf(stderr, "narrowd: the sandboxed command created %s, which narrowd protects (it runs later outside any sandbox), and narrowd could not move it aside: %v; look at it before you use this folder\n", w.Path, err)
			continue
		}
		fmt.Fprintf(stderr, "narrowd: the sandboxed command created %s, which narrowd protects (it runs later outside any sandbox); narrowd moved it to %s\n", w.Path, to)
		moved = append(moved, w.Path)
	}
	return moved
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// ExpectFor is what [Verify] must find in a sandbox with these writable
// roots, protected patterns and narrowd's own paths, computed by the
// verifier from the file system as it is now (the daemon's own look,
// not the wrapper's report): the read-only mounts of the protected
// paths that exist (the literal ones; "**/" matches deeper in the tree
// are the wrapper's alone) and the tmpfs over the passwd entry's home
// directory, unless a writable root holds it.
func ExpectFor(writable, patterns, own []string) (Expect, error) {
	roots, err := cleanDirs(writable)
	if err != nil {
		return Expect{}, err
	}
	p, err := Protect(roots, patterns, own)
	if err != nil {
		return Expect{}, err
	}
	var plan mountPlan
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		planHome(&plan, []string{u.HomeDir}, nil, roots)
	}
	return Expect{ReadOnly: p.ReadOnly, Homes: plan.Homes}, nil
}
