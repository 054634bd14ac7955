package proofs

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/rules"
)

// Target is one workspace path a call would create, change or remove:
// what a snapshot must hold for the call to be undone.
type Target struct {
	// Abs is the cleaned absolute path, proven under Root.
	Abs  string
	Root string
	// Recursive reports that the call may write a whole tree at Abs
	// (mv, cp -r): only a regular file or nothing may be there.
	Recursive bool
}

// WriteTargets lists every path a proven shell command would create,
// change or remove. It reports false when the list cannot be complete:
// the command is not proven, a program changes state beyond its path
// arguments (git, formatters of "."), reaches the network, runs code or
// has raised privileges, or a target is a pattern, dynamic, or not
// proven inside the workspace. A false list must not back a snapshot.
func WriteTargets(a *parse.Analysis, cwd string, ps Paths) ([]Target, bool) {
	if a == nil || !a.Proven() {
		return nil, false
	}
	var out []Target
	for _, p := range a.Programs {
		if p.Global || p.Irreversible || p.RunsCode || p.Privileged || p.Net != parse.NoNet || implicitOutputs(p) {
			return nil, false
		}
		worst := parse.Read
		for _, pa := range p.Paths {
			if pa.Access == parse.Read {
				continue
			}
			if pa.Access == parse.Exec {
				return nil, false
			}
			if pa.Word.Literal && parse.HarmlessDevice(pa.Word.Value) {
				continue
			}
			worst = max(worst, pa.Access)
			recursive := pa.Recursive
			if p.Name == "mv" && pa.Access == parse.Overwrite && len(a.Programs) == 1 {
				// mv leaves a tree at its destination only when a
				// source is a directory, and a directory source has no
				// snapshot, so the destination of a snapshotted mv is
				// at most one file. Alone only: an earlier part of the
				// command could make the source a new directory.
				recursive = false
			}
			if recursive && (pa.Access == parse.Create || pa.Access == parse.Overwrite) && !relocatesOrdinary(p, cwd, ps) {
				// tar -x, unzip, patch: the tree brings names narrowd
				// has not seen (a .envrc, a .git/hooks), so the write is
				// not proven to land on ordinary files.
				return nil, false
			}
			t, ok := target(cwd, ps, pa.Word, recursive, pa.Access == parse.Delete)
			if !ok {
				return nil, false
			}
			out = addTarget(out, t)
		}
		// A program the table says changes more than its path arguments
		// explain (git branch -D: a delete with no deleted path) changes
		// state narrowd cannot copy.
		if m, err := rules.Mutation.Parse(p.Mutation); err != nil || m > accessMutation(worst) {
			return nil, false
		}
	}
	return out, true
}

// backupOptions are, per program that can keep a backup of what it
// replaces, the short options that take an argument (the rest of a
// cluster is then that argument) and those that ask for a backup.
var backupOptions = map[string]struct{ withArg, backup string }{
	"sed":     {withArg: "efl", backup: ""},
	"cp":      {withArg: "St", backup: "bS"},
	"mv":      {withArg: "St", backup: "bS"},
	"ln":      {withArg: "St", backup: "bS"},
	"install": {withArg: "gmoStZ", backup: "bS"},
}

// implicitOutputs reports a program that writes files its arguments do
// not name, so no list of its targets is complete: backups (sed -i.bak,
// sed -i'DIR/*', cp -b, mv --backup, ln -S SUFFIX, gawk's
// inplace::suffix), compressors (gzip f writes f.gz and removes f) and
// rsync (backups, --delete, remote shells).
func implicitOutputs(p parse.Program) bool {
	switch p.Name {
	case "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "lzma", "unlzma", "zstd", "unzstd", "lz4", "lzip",
		"compress", "uncompress", "pigz", "unpigz", "pbzip2", "brotli", "rsync":
		return true
	}
	args := p.Argv[min(1, len(p.Argv)):]
	if p.Name == "awk" || p.Name == "gawk" {
		for _, w := range args {
			if strings.Contains(w.Value, "inplace::suffix") || strings.Contains(w.Value, "INPLACE_SUFFIX") {
				return true
			}
		}
		return false
	}
	opts, ok := backupOptions[p.Name]
	if !ok {
		return false
	}
	for _, w := range args {
		v := w.Value
		switch {
		case v == "--":
			return false
		case strings.HasPrefix(v, "--in-place="), strings.HasPrefix(v, "--backup"), strings.HasPrefix(v, "--suffix"):
			return true
		case p.Name == "sed" && strings.HasPrefix(v, "--i") && strings.Contains(v, "="):
			// An abbreviation of --in-place=SUFFIX.
			return true
		case len(v) > 1 && v[0] == '-' && v[1] != '-':
			for i, r := range v[1:] {
				switch {
				case strings.ContainsRune(opts.backup, r):
					return true
				case p.Name == "sed" && r == 'i' && i < len(v)-2:
					// -iSUFFIX: the rest of the cluster names the backup.
					return true
				case strings.ContainsRune(opts.withArg, r):
					// The rest of the word is the option's argument.
				default:
					continue
				}
				break
			}
		}
	}
	return false
}

// ToolTargets lists the path a file tool would change, or every file an
// apply_patch envelope names. It reports false when the tool changes no
// file narrowd can name or a path is not proven inside.
func ToolTargets(spec rules.InputSpec, input map[string]any, cwd string, ps Paths) ([]Target, bool) {
	switch spec.Kind {
	case rules.InputWrite, rules.InputEdit, rules.InputDelete:
		name, ok := input[spec.Field].(string)
		if !ok {
			return nil, false
		}
		t, ok := target(cwd, ps, parse.Word{Value: name, Literal: true}, false, spec.Kind == rules.InputDelete)
		if !ok {
			return nil, false
		}
		return []Target{t}, true
	case rules.InputPatch:
		text, _ := input[spec.Field].(string)
		if !strings.HasPrefix(strings.TrimSpace(text), "*** Begin Patch") {
			return nil, false
		}
		var out []Target
		for _, line := range strings.Split(text, "\n") {
			var name string
			for _, prefix := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
				if strings.HasPrefix(line, prefix) {
					name = strings.TrimPrefix(line, prefix)
				}
			}
			if name == "" {
				continue
			}
			t, ok := target(cwd, ps, parse.Word{Value: name, Literal: true}, false, strings.HasPrefix(line, "*** Delete File: "))
			if !ok {
				return nil, false
			}
			out = addTarget(out, t)
		}
		return out, len(out) > 0
	}
	return nil, false
}

// target proves one written path inside the workspace and ordinary: a
// snapshot restores bytes, not what a hook, a task or an agent setting
// ran in between, so standing configuration and narrowd's own files
// never back one.
func target(cwd string, ps Paths, w parse.Word, recursive, deleting bool) (Target, bool) {
	if !w.Literal || w.Glob {
		return Target{}, false
	}
	where := ps.Resolve(cwd, w.Value)
	if !where.Inside || where.Abs == where.Root || ps.OwnFile(cwd, w.Value) != "" {
		return Target{}, false
	}
	var c claims
	writeRaises(&c, ps, where, w.Value, deleting)
	if len(c.ev) > 0 {
		return Target{}, false
	}
	return Target{Abs: where.Abs, Root: where.Root, Recursive: recursive}, true
}

// addTarget adds t unless its path is already listed; a path listed
// twice is recursive if either use is.
func addTarget(out []Target, t Target) []Target {
	if i := slices.IndexFunc(out, func(o Target) bool { return o.Abs == t.Abs }); i >= 0 {
		out[i].Recursive = out[i].Recursive || t.Recursive
		return out
	}
	return append(out, t)
}

// relocators copy or move trees that already exist in the workspace: the
// names they create are those of their sources, which narrowd can walk.
// Every other recursive writer (tar -x, unzip, patch) takes its names
// from content narrowd does not read.
var relocators = []string{"cp", "mv"}

// relocateWalkLimit bounds how many entries of a source tree narrowd reads.
const relocateWalkLimit = 2000

// relocatesOrdinary reports that p is a relocator whose every source tree
// holds only ordinary names (no dot segment off the inert list, nothing
// on the standing table), walked on disk now. A source that does not
// exist yet was made by an earlier part of the same command, whose own
// writes are judged there. Without a disk narrowd can list directories
// with, it cannot tell: false.
func relocatesOrdinary(p parse.Program, cwd string, ps Paths) bool {
	lister, ok := ps.Disk.(interface {
		ReadDir(name string) ([]fs.DirEntry, error)
	})
	if !ok || !slices.Contains(relocators, p.Name) {
		return false
	}
	t, err := ps.standingTable()
	if err != nil {
		return false
	}
	budget := relocateWalkLimit
	for _, pa := range p.Paths {
		if pa.Access != parse.Read && pa.Access != parse.Update {
			continue
		}
		w := ps.Resolve(cwd, pa.Word.Value)
		if !w.Inside {
			return false
		}
		// The source's own name arrives too when the destination is a
		// directory that exists (cp -r stage/.claude dir).
		base := ""
		if w.Abs != w.Root {
			base = filepath.Base(w.Abs)
			if t.Ordinary(base) != "" {
				return false
			}
		}
		if !walkOrdinary(lister, t, w.Abs, base, &budget) {
			return false
		}
	}
	return true
}

// walkOrdinary walks the tree at dir (rel is the path below the source)
// and reports that every name in it is ordinary, within budget entries.
func walkOrdinary(lister interface {
	ReadDir(name string) ([]fs.DirEntry, error)
}, t *StandingTable, dir, rel string, budget *int) bool {
	entries, err := lister.ReadDir(dir)
	if err != nil {
		// Not there yet, or a file: nothing below it.
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
	}
	for _, e := range entries {
		if *budget--; *budget < 0 {
			return false
		}
		r := path.Join(rel, e.Name())
		if t.Ordinary(r) != "" {
			return false
		}
		if e.IsDir() && !walkOrdinary(lister, t, filepath.Join(dir, e.Name()), r, budget) {
			return false
		}
	}
	return true
}
