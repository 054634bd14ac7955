package parse

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxDirs bounds how many working directories are tracked at once; more
// possibilities make the directory unknown.
const maxDirs = 8

// dirState is where the shell may be: one of dirs (nil: only the start
// directory), or anywhere when unknown.
type dirState struct {
	dirs    []string
	unknown bool
}

func (d dirState) list() []string {
	if d.dirs == nil {
		return []string{"."}
	}
	return d.dirs
}

// cd is the state after a successful cd to target. A target whose ".."
// may not be lexical is unknown: bash's cd first tries the path with
// each ".." removed with the name before it, and when no such directory
// exists it changes to the path as written, where ".." climbs out of
// whatever a symlink before it points to (cd link/../etc lands in the
// parent of the link's target). So ".." is proven only as a leading
// segment from the start directory, which is the call's own.
func (d dirState) cd(target string) dirState {
	if d.unknown {
		return d
	}
	seenName := false
	for _, seg := range strings.Split(target, "/") {
		switch seg {
		case "..":
			if seenName || d.dirs != nil || path.IsAbs(target) {
				return dirState{unknown: true}
			}
		case "", ".":
		default:
			seenName = true
		}
	}
	if path.IsAbs(target) {
		return dirState{dirs: []string{path.Clean(target)}}
	}
	var out []string
	for _, from := range d.list() {
		if to := path.Join(from, target); !slices.Contains(out, to) {
			out = append(out, to)
		}
	}
	return normDirs(out)
}

// normDirs turns a list back into a state: only "." is the start.
func normDirs(dirs []string) dirState {
	if len(dirs) > maxDirs {
		return dirState{unknown: true}
	}
	if len(dirs) == 1 && dirs[0] == "." {
		return dirState{}
	}
	return dirState{dirs: dirs}
}

// unionDirs is where the shell may be after any of several paths.
func unionDirs(states ...dirState) dirState {
	var out []string
	for _, s := range states {
		if s.unknown {
			return s
		}
		for _, d := range s.list() {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return normDirs(out)
}

// cdTarget recognizes a command that changes the shell's directory: cd,
// pushd or popd, also after builtin or command. It returns the operand
// when the new directory follows from it lexically; known is false when
// it does not: no operand means $HOME, "-" means $OLDPWD, pushd and
// popd use the directory stack, and every option (-L, -P, -e, -@)
// changes how bash resolves the operand (-P resolves symlinks first).
//
// A plain relative operand (cd sub) is also looked up in CDPATH. CDPATH
// comes from the agent's environment, which narrowd does not see; like
// PATH it is the person's own, and a text that sets it keeps the
// ceiling (it is not on safe_env), so cd sub is taken to reach ./sub.
func cdTarget(argv []Word) (target string, isCd, known bool) {
	i := builtinStart(argv)
	if i >= len(argv) || !argv[i].Literal {
		return "", false, false
	}
	name := argv[i].Value
	if name != "cd" && name != "pushd" && name != "popd" {
		return "", false, false
	}
	if name != "cd" {
		return "", true, false
	}
	var ops []string
	opts := true
	for _, w := range argv[i+1:] {
		if !w.Literal {
			return "", true, false
		}
		v := w.Value
		switch {
		case opts && v == "--":
			opts = false
		case opts && len(v) > 1 && v[0] == '-':
			return "", true, false
		default:
			opts = false
			ops = append(ops, v)
		}
	}
	if len(ops) != 1 || ops[0] == "" || ops[0] == "-" {
		return "", true, false
	}
	return ops[0], true, true
}

// builtinStart is the index of the word that names the builtin bash runs
// for argv: past builtin, and command with -p or -- (command -p cd x is
// cd x; command -v cd only prints).
func builtinStart(argv []Word) int {
	i := 0
	for i < len(argv) && argv[i].Literal {
		switch argv[i].Value {
		case "builtin":
			i++
			if i < len(argv) && argv[i].Literal && argv[i].Value == "--" {
				i++
			}
		case "command":
			i++
			for i < len(argv) && argv[i].Literal && (argv[i].Value == "-p" || argv[i].Value == "--") {
				i++
			}
		default:
			return i
		}
	}
	return i
}

// changesDir reports whether a statement contains a command that changes
// directory, at any depth.
func changesDir(s *syntax.Stmt) bool {
	found := false
	syntax.Walk(s, func(n syntax.Node) bool {
		if found {
			return false
		}
		if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 {
			switch c.Args[0].Lit() {
			case "cd", "pushd", "popd", "builtin", "command", "eval", "source", ".":
				found = true
			}
		}
		return !found
	})
	return found
}
