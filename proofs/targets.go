package proofs

import (
	"slices"
	"strings"

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
		if p.Global || p.Irreversible || p.RunsCode || p.Privileged || p.Net != parse.NoNet {
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
			t, ok := target(cwd, ps, pa.Word, pa.Recursive)
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
		t, ok := target(cwd, ps, parse.Word{Value: name, Literal: true}, false)
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
			t, ok := target(cwd, ps, parse.Word{Value: name, Literal: true}, false)
			if !ok {
				return nil, false
			}
			out = addTarget(out, t)
		}
		return out, len(out) > 0
	}
	return nil, false
}

// target proves one written path inside the workspace.
func target(cwd string, ps Paths, w parse.Word, recursive bool) (Target, bool) {
	if !w.Literal || w.Glob {
		return Target{}, false
	}
	where := ps.Resolve(cwd, w.Value)
	if !where.Inside || where.Abs == where.Root {
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
