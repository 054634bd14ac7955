package parse

import (
	"slices"
	"strings"
)

// Handlers for the languages inside arguments: find's expression, shells'
// options, sed and awk programs, tar's modes, dd's operands, git config's
// read/write forms. Each decides conservatively: what it does not
// recognise makes the call unprovable.

// hasHit reports whether an option with this canonical name was given.
func (p parsed) hasHit(canon ...string) bool {
	for _, h := range p.hits {
		for _, c := range canon {
			if h.def.canon == c && !h.negated {
				return true
			}
		}
	}
	return false
}

// values returns the values of the options with this canonical name.
func (p parsed) values(canon string) []Word {
	var out []Word
	for _, h := range p.hits {
		if h.def.canon == canon && h.hasValue {
			out = append(out, h.value)
		}
	}
	return out
}

// findNoArg are find primaries and operators without an argument.
var findNoArg = [...]string{
	"-print", "-print0", "-ls", "-prune", "-quit", "-true", "-false", "-empty",
	"-executable", "-readable", "-writable", "-nouser", "-nogroup", "-depth",
	"-d", "-xdev", "-mount", "-noleaf", "-ignore_readdir_race",
	"-noignore_readdir_race", "-daystart", "-nowarn", "-warn", "-not", "!",
	"(", ")", "-a", "-and", "-o", "-or", ",",
}

// findOneArg are find primaries whose one argument is not a path.
var findOneArg = [...]string{
	"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename",
	"-regex", "-iregex", "-lname", "-ilname", "-type", "-xtype", "-size",
	"-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-used",
	"-perm", "-user", "-group", "-uid", "-gid", "-links", "-inum",
	"-maxdepth", "-mindepth", "-fstype", "-regextype", "-context", "-printf",
}

// findPathArg are find primaries whose argument is a file it reads (its
// times or identity).
var findPathArg = [...]string{"-newer", "-anewer", "-cnewer", "-samefile"}

func inList(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// find reads find's options, roots and expression. Roots are read
// recursively; -delete deletes them recursively; -exec and friends become
// Inner argv with {} replaced by the roots.
func (r *run) find(s *spec, args []Word) {
	r.mut = lvlRead
	i := 0
opts:
	for i < len(args) {
		a := args[i].Value
		switch {
		case a == "-H" || a == "-P":
			i++
		case a == "-L":
			r.fail("find -L follows symbolic links out of the tree")
			return
		case a == "-D":
			i += 2
		case strings.HasPrefix(a, "-O") && len(a) > 2:
			i++
		default:
			break opts
		}
	}
	var roots []Word
	for i < len(args) {
		a := args[i].Value
		if (len(a) > 1 && a[0] == '-') || a == "(" || a == "!" || a == ")" || a == "," {
			break
		}
		roots = append(roots, args[i])
		i++
	}
	if len(roots) == 0 {
		roots = []Word{{Value: ".", Literal: true, Pos: r.prog.Pos}}
	}
	deleting := false
	for i < len(args) {
		a := args[i].Value
		switch {
		case inList(findNoArg[:], a):
			i++
		case inList(findOneArg[:], a):
			if i+1 >= len(args) {
				r.fail("find " + a + " needs an argument")
				return
			}
			i += 2
		case inList(findPathArg[:], a) || (strings.HasPrefix(a, "-newer") && len(a) == 8):
			if i+1 >= len(args) {
				r.fail("find " + a + " needs an argument")
				return
			}
			if !strings.HasSuffix(a, "t") || a == "-samefile" {
				r.addPath(args[i+1], Read, false)
			}
			i += 2
		case a == "-fprint" || a == "-fprint0" || a == "-fls":
			if i+1 >= len(args) {
				r.fail("find " + a + " needs an argument")
				return
			}
			r.addPath(args[i+1], Overwrite, false)
			r.rule = append(r.rule, a)
			i += 2
		case a == "-fprintf":
			if i+2 >= len(args) {
				r.fail("find -fprintf needs two arguments")
				return
			}
			r.addPath(args[i+1], Overwrite, false)
			r.rule = append(r.rule, a)
			i += 3
		case a == "-delete":
			deleting = true
			r.rule = append(r.rule, a)
			i++
		case a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir":
			j := i + 1
			end := -1
			for ; j < len(args); j++ {
				v := args[j].Value
				if v == ";" || (v == "+" && j > i+1 && args[j-1].Value == "{}") {
					end = j
					break
				}
			}
			if end < 0 {
				r.fail("find " + a + " without ; or {} +")
				return
			}
			cmd := args[i+1 : end]
			if len(cmd) == 0 || cmd[0].Value == "{}" {
				r.fail("find " + a + " runs the found files")
				return
			}
			var inner []Word
			for _, w := range cmd {
				switch {
				case w.Value == "{}":
					inner = append(inner, roots...)
				case strings.Contains(w.Value, "{}"):
					// The file name lands inside a word: sh -c 'x {}'
					// turns names into code.
					r.fail("find " + a + " substitutes {} inside a word")
					return
				default:
					inner = append(inner, w)
				}
			}
			r.wrapper = "find -exec"
			r.inner = append(r.inner, Inner{Argv: inner, Recursive: true})
			if !strings.Contains(r.rule[len(r.rule)-1], a) {
				r.rule = append(r.rule, a)
			}
			i = end + 1
		case a == "-follow":
			r.fail("find -follow follows symbolic links out of the tree")
			return
		default:
			r.fail("unknown find primary " + a)
			return
		}
	}
	acc := Read
	if deleting {
		acc = Delete
	}
	for _, root := range roots {
		r.addPath(root, acc, true)
	}
}

// shellOptions are set -o and shopt names a shell may be started with;
// none changes what the script text means (allexport would: every
// assignment of the script is exported).
var shellOptions = [...]string{
	"errexit", "nounset", "pipefail", "xtrace", "verbose", "noglob",
	"noclobber", "posix", "noexec", "errtrace", "functrace",
	"nullglob", "failglob", "dotglob", "globstar", "nocaseglob",
	"inherit_errexit", "extglob",
}

// shell reads sh/bash/dash/zsh options. -c makes the next operand shell
// text for the caller to parse (the words after it are $0, $1, …); a
// first operand otherwise is a script file that runs.
func (r *run) shell(s *spec, args []Word) {
	r.mut = lvlRead
	cmdMode := false
	i := 0
	for ; i < len(args); i++ {
		a := args[i].Value
		if a == "--" || a == "-" {
			i++
			break
		}
		if len(a) < 2 || (a[0] != '-' && a[0] != '+') {
			break
		}
		if strings.HasPrefix(a, "--") {
			switch a {
			case "--norc", "--noprofile", "--posix", "--noediting", "--verbose", "--restricted":
				continue
			case "--version", "--help":
				if len(args) == 1 {
					return
				}
				continue
			case "--login":
				// See -l.
				continue
			default:
				r.fail("unknown flag " + a + " for " + s.name)
			}
			return
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			switch {
			case c == 'c' && a[0] == '-':
				cmdMode = true
			case c == 'o' || c == 'O':
				if i+1 >= len(args) || !inList(shellOptions[:], args[i+1].Value) {
					r.fail(s.name + " -" + string(rune(c)) + " with an unknown option")
					return
				}
				i++
			case c == 'i':
				r.fail("interactive " + s.name + " reads rc files")
				return
			case c == 'l':
				// A login shell first sources /etc/profile and the
				// person's ~/.profile (or .bash_profile, .zprofile):
				// their own environment, like PATH, which the shell
				// tool's own shell already carries. None is in the
				// workspace, and every write to them is asked about
				// (sensitive names in proofs/path.go).
			case c == 's':
				r.fail(s.name + " -s reads commands from stdin")
				return
			case c == 'a':
				// allexport: every assignment of the script is
				// exported, which the analysis of the script
				// does not know.
				r.fail(s.name + " -a exports every assignment")
				return
			case strings.IndexByte("euxvnfhCbmBEHPTr", c) >= 0:
			default:
				r.fail("unknown flag -" + string(rune(c)) + " for " + s.name)
				return
			}
		}
	}
	ops := args[min(i, len(args)):]
	if cmdMode {
		if len(ops) == 0 {
			r.fail(s.name + " -c needs a command")
			return
		}
		r.rule = append(r.rule, "-c")
		r.wrapper = "sh -c"
		script := ops[0]
		r.inner = append(r.inner, Inner{Script: &script})
		return
	}
	if len(ops) == 0 {
		r.fail(s.name + " reads commands from stdin")
		return
	}
	r.addPath(ops[0], Exec, false)
}

// builtin checks the words of shell builtins that bash evaluates: test's
// -eq operands and -v names, read's and printf -v's variable names,
// shift's and exit's counts are arithmetic, where a subscript a[$(cmd)]
// runs cmd even from a quoted literal. Names they assign must not be
// special ones (PATH, IFS): only names with no upper case, or safe_env.
func (r *run) builtin(p parsed) {
	name := r.prog.Name
	words := append(slices.Clone(p.ops), p.rest...)
	for _, h := range p.hits {
		if h.hasValue {
			words = append(words, h.value)
		}
	}
	for i, w := range words {
		if name == "[" && i == len(p.ops)-1 && w.Value == "]" {
			continue
		}
		if strings.ContainsAny(w.Value, "[$`") {
			r.fail(name + " argument " + w.Value + " may be evaluated")
			return
		}
	}
	var assigned []Word
	switch name {
	case "jobs", "wait":
		// jobs -x runs a command; wait -p assigns a variable.
		for _, w := range words {
			if strings.HasPrefix(w.Value, "-") && strings.ContainsAny(w.Value, "xp") {
				r.fail(name + " " + w.Value + " is not modelled")
				return
			}
		}
	case "printf":
		if len(p.ops) > 0 && strings.HasPrefix(p.ops[0].Value, "-v") {
			r.fail("printf -v assigns a variable")
		}
	case "read":
		assigned = append(slices.Clone(p.ops), p.values("-a")...)
	case "getopts":
		if len(p.ops) > 1 {
			assigned = p.ops[1:2]
		}
	}
	if name == "unset" {
		// unset removes a variable (or with -f a function): the
		// name goes through the same allowlist as setting it.
		functions := false
		for _, h := range p.ops {
			switch {
			case h.Value == "-f":
				functions = true
			case h.Value == "-v" || h.Value == "-n":
			default:
				if !functions {
					assigned = append(assigned, h)
				}
			}
		}
	}
	for _, w := range assigned {
		// A private lower-case name, or one of safe_env. read and
		// getopts assign a value only known at run time; unset
		// gives none.
		var v *Word
		if name != "unset" {
			v = &Word{Why: name}
		}
		if !r.k.shellVarAllowed(w.Value, v, false) {
			r.fail(name + " assigns " + w.Value)
			return
		}
	}
}

// ipReads are the ip verbs that only show state.
var ipReads = [...]string{"show", "list", "lst", "ls", "get"}

// ip accepts OBJECT alone or OBJECT followed by a reading verb and its
// filters; every changing verb (add, del, set, flush, exec…) and their
// abbreviations fall outside.
func (r *run) ip(p parsed) {
	if len(p.ops) <= 1 {
		return
	}
	if p.ops[0].Value == "netns" && p.ops[1].Value != "list" && p.ops[1].Value != "ls" && p.ops[1].Value != "identify" {
		r.fail("ip netns " + p.ops[1].Value + " is not a read")
		return
	}
	if !inList(ipReads[:], p.ops[1].Value) {
		r.fail("ip " + p.ops[0].Value + " " + p.ops[1].Value + " is not a read")
	}
}

// ps shows other processes' environments with the BSD e option (ps eww,
// ps auxe); -e (all processes) is not that.
func (r *run) ps(p parsed) {
	for _, w := range p.ops {
		if !strings.HasPrefix(w.Value, "-") && strings.Contains(w.Value, "e") {
			r.readsEnv()
			return
		}
	}
}

// setLetters are set's one-letter options that only change error
// handling, tracing, job control or file creation.
const setLetters = "euxvfCETabmnhP"

// setOptions are the set -o and shopt names allowed, for the same reason.
// lastpipe is not: it runs a pipeline's last command in this shell, so a
// cd there (true | cd dir) moves every later command.
// dotglob, globstar and nocaseglob are not: narrowd proves pathname
// patterns under bash's default matching (a leading dot is matched only
// explicitly, ** is *, case matters), and they would change what a
// pattern can reach.
var setOptions = [...]string{
	"errexit", "nounset", "pipefail", "xtrace", "verbose", "noglob", "noclobber",
	"errtrace", "functrace", "allexport", "noexec", "notify", "monitor", "hashall",
	"physical", "nullglob", "failglob", "nocasematch", "inherit_errexit",
}

// set checks set and shopt words (see setLetters and setOptions).
func (r *run) set(p parsed) {
	words := p.ops
	if len(words) == 0 {
		if r.prog.Name == "set" {
			r.readsEnv()
		}
		return
	}
	shopt := r.prog.Name == "shopt"
	for i := 0; i < len(words); i++ {
		w := words[i].Value
		if shopt {
			switch {
			case w == "-s" || w == "-u" || w == "-q" || w == "-p":
			case inList(setOptions[:], w):
			default:
				r.fail("shopt " + w + " is not modelled")
				return
			}
			continue
		}
		if len(w) < 2 || (w[0] != '-' && w[0] != '+') || w == "--" {
			r.fail("set changes positional parameters")
			return
		}
		for j := 1; j < len(w); j++ {
			c := w[j]
			switch {
			case c == 'o':
				if i+1 < len(words) {
					i++
					if !inList(setOptions[:], words[i].Value) {
						r.fail("set -o " + words[i].Value + " is not modelled")
						return
					}
				}
			case strings.IndexByte(setLetters, c) < 0:
				r.fail("set -" + string(rune(c)) + " is not modelled")
				return
			}
		}
	}
}

// export judges export reached through builtin or command (the
// analyzer judges a plain export itself): NAME=VALUE and NAME must pass
// the environment allowlist, and export alone or -p prints the
// environment.
func (r *run) export(p parsed) {
	if len(p.ops) == 0 || (len(p.ops) == 1 && p.ops[0].Value == "-p") {
		r.readsEnv()
		return
	}
	for _, w := range p.ops {
		name, value, hasValue := strings.Cut(w.Value, "=")
		var v *Word
		if hasValue {
			v = &Word{Value: value, Literal: true}
		}
		if !isAssignment(name+"=") || !r.k.envAllowed(name, v) {
			r.fail("export " + name + " changes what later programs run")
			return
		}
	}
}
