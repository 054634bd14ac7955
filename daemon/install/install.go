package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Config says which agent's settings to edit and what to write there. The
// zero value of every optional field works.
type Config struct {
	// Agent is the agent whose settings are edited.
	Agent Agent
	// ProjectDir selects the project-level settings under this directory.
	// Empty selects the user-level settings under Home.
	ProjectDir string
	// Home is the user's home directory; needed at user level.
	Home string
	// UserDir overrides the agent's user config directory (the caller
	// reads CLAUDE_CONFIG_DIR, CODEX_HOME or COPILOT_HOME into it).
	// Empty means the agent's default under Home.
	UserDir string
	// Binary is the absolute path of the binary the hook runs: narrowd,
	// or narrowd-hook ([HookBinaryName]) beside it. Uninstall also
	// recognises the exact command it renders.
	Binary string
	// HTTPAddr, for Claude Code only, installs an "http" hook that posts
	// to the daemon's loopback listener at this host:port instead of a
	// command hook.
	HTTPAddr string
	// DryRun computes the change and writes nothing.
	DryRun bool
	// Now stamps backup names; nil means time.Now.
	Now func() time.Time
}

// Result is what an edit did, or would do with [Config.DryRun].
type Result struct {
	// Path is the settings file.
	Path string
	// Changed reports that the file's JSON changed (or was created or
	// removed). An unchanged file is never rewritten.
	Changed bool
	// Removed reports that uninstall removed the file because nothing but
	// narrowd's entries was left in it.
	Removed bool
	// Backup is the copy of the previous file, or "" when there was no
	// previous file, nothing changed, or this is a dry run.
	Backup string
	// Before is the previous content, nil when the file did not exist.
	Before []byte
	// After is the new content, nil when the file is removed.
	After []byte
}

// ErrInvalidJSON is wrapped by the error for a settings file that is not
// valid JSON or has an unexpected shape; such a file is never written.
var ErrInvalidJSON = errors.New("not valid JSON")

// SettingsPath returns the settings file cfg selects.
func SettingsPath(cfg Config) (string, error) {
	sp, err := specFor(cfg.Agent)
	if err != nil {
		return "", err
	}
	if cfg.ProjectDir != "" {
		dir, err := filepath.Abs(cfg.ProjectDir)
		if err != nil {
			return "", fmt.Errorf("project dir: %w", err)
		}
		return filepath.Join(dir, filepath.FromSlash(sp.projectFile)), nil
	}
	dir := cfg.UserDir
	if dir == "" {
		if cfg.Home == "" {
			return "", fmt.Errorf("no home directory to find %s's user settings in", cfg.Agent)
		}
		dir = filepath.Join(cfg.Home, sp.userDir)
	}
	return filepath.Join(dir, filepath.FromSlash(sp.userFile)), nil
}

// Install adds narrowd's hook entries to the settings file cfg selects, or
// updates them in place, keeping everything else. Running it twice changes
// nothing the second time.
func Install(cfg Config) (Result, error) {
	sp, err := specFor(cfg.Agent)
	if err != nil {
		return Result{}, err
	}
	if err := checkBinary(cfg.Binary); err != nil {
		return Result{}, err
	}
	if cfg.HTTPAddr != "" {
		if cfg.Agent != Claude {
			return Result{}, fmt.Errorf("an http hook is only supported for %s, not %s", Claude, cfg.Agent)
		}
		if cfg.HTTPAddr, err = checkHTTPAddr(cfg.HTTPAddr); err != nil {
			return Result{}, err
		}
	}
	return edit(cfg, func(path string, root *object) (bool, error) {
		return true, merge(sp, cfg, root, path)
	})
}

// Uninstall removes exactly narrowd's hook entries from the settings file
// cfg selects, and the containers that became empty by their removal. The
// file is removed when nothing else is left in it.
func Uninstall(cfg Config) (Result, error) {
	sp, err := specFor(cfg.Agent)
	if err != nil {
		return Result{}, err
	}
	return edit(cfg, func(path string, root *object) (bool, error) {
		if err := remove(sp, cfg, root, path); err != nil {
			return false, err
		}
		keep := len(root.members) > 0
		if sp.layout == flat && len(root.members) == 1 && root.members[0].key == "version" {
			keep = false
		}
		return keep, nil
	})
}

// edit loads the settings file at cfg's path (an absent or blank file is
// an empty object), applies change, and writes the result back if its JSON
// differs. change reports whether the file should be kept at all.
func edit(cfg Config, change func(path string, root *object) (keep bool, err error)) (Result, error) {
	path, err := SettingsPath(cfg)
	if err != nil {
		return Result{}, err
	}
	res := Result{Path: path}
	real, err := resolve(path)
	if err != nil {
		return res, err
	}
	before, mode, err := readFile(real)
	if err != nil {
		return res, err
	}
	res.Before = before
	root := &object{}
	if before != nil {
		tree, err := decodeTree(before)
		switch {
		case errors.Is(err, errEmpty):
		case err != nil:
			return res, fmt.Errorf("%s: %w: %w (fix or move the file; nothing was written)", path, ErrInvalidJSON, err)
		default:
			o, ok := tree.(*object)
			if !ok {
				return res, fmt.Errorf("%s: %w: the top level is not an object (nothing was written)", path, ErrInvalidJSON)
			}
			root = o
		}
	}
	origEnc := encodeTree(root)
	keep, err := change(path, root)
	if err != nil {
		return res, err
	}
	after := encodeTree(root)
	switch {
	case string(after) == string(origEnc) && before != nil:
		// Nothing of narrowd's to add or remove: leave the file alone,
		// however it is formatted.
		res.After = before
		return res, nil
	case !keep && before == nil:
		return res, nil
	case !keep:
		res.Changed, res.Removed = true, true
	default:
		res.Changed, res.After = true, after
	}
	if cfg.DryRun {
		return res, nil
	}
	if before != nil {
		if res.Backup, err = backup(real, before, mode, now(cfg.Now)); err != nil {
			return res, err
		}
	}
	if res.Removed {
		if err := os.Remove(real); err != nil {
			return res, fmt.Errorf("remove %s: %w", path, err)
		}
		return res, nil
	}
	if before == nil {
		mode = 0o644
	}
	if err := writeAtomic(real, res.After, mode); err != nil {
		return res, err
	}
	return res, nil
}

// merge puts narrowd's handler under every event of sp into root.
func merge(sp spec, cfg Config, root *object, path string) error {
	wantCmd := HookCommand(cfg.Binary, cfg.Agent)
	if sp.layout == flat {
		if v, ok := root.get("version"); ok {
			if raw, isRaw := v.(json.RawMessage); !isRaw || string(raw) != "1" {
				return fmt.Errorf("%s: unsupported \"version\" %s (want 1; nothing was written)", path, encodeTree(v))
			}
		} else {
			root.setFirst("version", rawInt(1))
		}
	}
	hooks, err := childObject(root, "hooks", path, true)
	if err != nil {
		return err
	}
	for _, ev := range sp.events {
		want := handler(cfg, ev.name)
		list, err := childArray(hooks, ev.name, path+": hooks", true)
		if err != nil {
			return err
		}
		found := false
		if sp.layout == flat {
			list.elems = filterHandlers(list.elems, wantCmd, func(h *object) bool {
				if found {
					return false // a duplicate: narrowd's hook runs once per event
				}
				found = true
				update(h, want)
				return true
			})
		} else {
			groups := list.elems[:0]
			for _, g := range list.elems {
				gobj, ok := g.(*object)
				hs, ok2 := childArrayIfAny(gobj, "hooks")
				if !ok || !ok2 {
					groups = append(groups, g)
					continue
				}
				n := len(hs.elems)
				hs.elems = filterHandlers(hs.elems, wantCmd, func(h *object) bool {
					if found {
						return false
					}
					found = true
					update(h, want)
					return true
				})
				if n > 0 && len(hs.elems) == 0 {
					continue // it held only narrowd duplicates
				}
				groups = append(groups, g)
			}
			list.elems = groups
		}
		if found {
			continue
		}
		if sp.layout == flat {
			list.elems = append(list.elems, want)
			continue
		}
		g := &object{}
		if ev.matcher != "" {
			g.set("matcher", rawString(ev.matcher))
		}
		g.set("hooks", &array{elems: []any{want}})
		list.elems = append(list.elems, g)
	}
	return nil
}

// remove takes narrowd's handlers out of every event of sp in root.
func remove(sp spec, cfg Config, root *object, path string) error {
	wantCmd := ""
	if cfg.Binary != "" {
		wantCmd = HookCommand(cfg.Binary, cfg.Agent)
	}
	hooks, err := childObject(root, "hooks", path, false)
	if err != nil || hooks == nil {
		return err
	}
	drop := func(*object) bool { return false }
	for _, ev := range sp.events {
		list, err := childArray(hooks, ev.name, path+": hooks", false)
		if err != nil {
			return err
		}
		if list == nil {
			continue
		}
		n := len(list.elems)
		if sp.layout == flat {
			list.elems = filterHandlers(list.elems, wantCmd, drop)
		} else {
			groups := list.elems[:0]
			for _, g := range list.elems {
				gobj, ok := g.(*object)
				hs, ok2 := childArrayIfAny(gobj, "hooks")
				if ok && ok2 {
					m := len(hs.elems)
					hs.elems = filterHandlers(hs.elems, wantCmd, drop)
					if m > 0 && len(hs.elems) == 0 {
						continue
					}
				}
				groups = append(groups, g)
			}
			list.elems = groups
		}
		if n > 0 && len(list.elems) == 0 {
			hooks.del(ev.name)
		}
	}
	if len(hooks.members) == 0 {
		root.del("hooks")
	}
	return nil
}

// filterHandlers keeps every element that is not narrowd's handler, and
// those of narrowd's for which keep returns true.
func filterHandlers(elems []any, wantCmd string, keep func(*object) bool) []any {
	out := elems[:0]
	for _, e := range elems {
		if h, ok := e.(*object); ok && ours(h, wantCmd) && !keep(h) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// update rewrites handler h to want in place: keys h shares with want keep
// their position, a transport key want does not use gives its position to
// the one want uses (url ↔ command), and keys a user added stay.
func update(h, want *object) {
	transport := func(k string) bool { return slices.Contains(handlerKeys(), k) }
	var missing []member
	for _, m := range want.members {
		if _, ok := h.get(m.key); !ok {
			missing = append(missing, m)
		}
	}
	out := make([]member, 0, len(h.members)+len(missing))
	for _, m := range h.members {
		v, inWant := want.get(m.key)
		switch {
		case inWant:
			out = append(out, member{m.key, v})
		case transport(m.key):
			if i := slices.IndexFunc(missing, func(n member) bool { return transport(n.key) }); i >= 0 {
				out = append(out, missing[i])
				missing = slices.Delete(missing, i, i+1)
			}
		default:
			out = append(out, m)
		}
	}
	h.members = append(out, missing...)
}

// childObject returns parent[key] as an object, creating it when create is
// set; a present value of another type is an error.
func childObject(parent *object, key, where string, create bool) (*object, error) {
	v, ok := parent.get(key)
	if !ok {
		if !create {
			return nil, nil
		}
		o := &object{}
		parent.set(key, o)
		return o, nil
	}
	o, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("%s: %w: %q is not an object (nothing was written)", where, ErrInvalidJSON, key)
	}
	return o, nil
}

// childArray is childObject for arrays.
func childArray(parent *object, key, where string, create bool) (*array, error) {
	v, ok := parent.get(key)
	if !ok {
		if !create {
			return nil, nil
		}
		a := &array{}
		parent.set(key, a)
		return a, nil
	}
	a, ok := v.(*array)
	if !ok {
		return nil, fmt.Errorf("%s: %w: %q is not an array (nothing was written)", where, ErrInvalidJSON, key)
	}
	return a, nil
}

// childArrayIfAny returns parent[key] if parent is an object and the value
// is an array.
func childArrayIfAny(parent *object, key string) (*array, bool) {
	if parent == nil {
		return nil, false
	}
	v, ok := parent.get(key)
	if !ok {
		return nil, false
	}
	a, ok := v.(*array)
	return a, ok
}

// resolve follows a symlinked settings file (a dotfiles checkout, say) to
// the file it names, so that the atomic rename replaces that file rather
// than the link.
func resolve(path string) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil
	}
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return path, nil
	}
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s is a symlink to a missing file; create the target or remove the link", path)
	}
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	return real, nil
}
