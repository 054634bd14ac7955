package parse

import (
	"path"
	"slices"
	"strings"
)

// maxDepth bounds how deep wrappers and nested scripts are followed
// (sudo env sh -c 'eval …' …). Deeper nesting keeps the ceiling.
const maxDepth = 16

// Reasons found while analyzing.
const (
	whyDeep         = "nesting too deep"
	whyFunctionCall = "function call"
	whyDynamicName  = "dynamic command name"
	whyScriptSyntax = "script does not parse"
	whyDirUnknown   = "unknown working directory"
	envStart        = "environment variable "
	envEnd          = " is not on safe_env"
)

// Analyze finds every program src would run and classifies each with k:
// it parses src, unwraps wrappers (sudo, env, xargs, …) and nested
// scripts (sh -c, eval, …) as k describes them, and lists every construct
// whose effect is only known at run time as [Unproven]. Text that does
// not parse gives an Analysis with Err set. Text with no commands (empty,
// blank or comments only) gives an empty Analysis, which is proven.
//
// Beyond k, Analyze itself:
//   - appends a command's redirect targets to the Paths of its outermost
//     program and raises its Mutation to match (> is overwrite, which is
//     delete without pure deletion); a redirect of a compound command or
//     with no command is a program named "redirect";
//   - places relative paths in each directory an earlier cd may have
//     left the shell in (cd sub && rm x gives sub/x); where that
//     directory is unknown (cd, cd -, cd -P x, cd "$d", pushd, popd, a
//     non-lexical ..), keeps the ceiling for relative paths and for
//     every program not on the table's cwd_free list;
//   - judges declaration builtins (export, declare, local, readonly,
//     typeset) and every assignment by the environment allowlist
//     (safe_env, see env.go); a declaration that prints variables
//     or functions reads the environment;
//   - keeps the ceiling for calls of functions the text defines, dynamic
//     words, and wrappers nested deeper than 16.
//
// Everything found inside a nested script is placed at the word that
// holds the script, so every position is inside src.
func Analyze(src string, k *Knowledge) *Analysis {
	a := &Analysis{}
	s, err := Parse(src)
	if err != nil {
		a.Err = err
		return a
	}
	a.Programs = make([]Program, 0, len(s.Commands))
	z := analyzer{k: k, a: a, text: src}
	z.script(s, frame{})
	return a
}

// analyzer carries one Analyze call's state.
type analyzer struct {
	k *Knowledge
	a *Analysis
	// funcs names every function defined by the text or a script it
	// runs in the same shell.
	funcs map[string]bool
	// dirLost is set once eval changed directory: where later commands
	// run is unknown.
	dirLost bool
	// allExport is set once the text may have turned on set -a: every
	// assignment from then on is exported.
	allExport bool
	// seen holds the reasons already listed, to list each once.
	seen map[Unproven]bool
	// text is the shell text being analyzed: src, or a nested script.
	text string
}

// frame is what the wrappers around a command add to it.
type frame struct {
	depth      int
	wrappers   []string
	privileged bool
	// dir is where the command runs, relative to where the text Analyze
	// was given starts.
	dir dirState
}

func (z *analyzer) unproven(p Pos, why string) {
	u := Unproven{Pos: p, Why: why}
	if z.seen == nil {
		z.seen = map[Unproven]bool{}
	}
	if z.seen[u] {
		return
	}
	z.seen[u] = true
	z.a.Unproven = append(z.a.Unproven, u)
}

func (z *analyzer) script(s *Script, fr frame) {
	for _, f := range s.Functions {
		if z.funcs == nil {
			z.funcs = map[string]bool{}
		}
		z.funcs[f] = true
	}
	for _, u := range s.Unproven {
		z.unproven(u.Pos, u.Why)
	}
	if !z.allExport && slices.ContainsFunc(s.Commands, func(c Command) bool { return setsAllExport(c.Argv) }) {
		// Anywhere in the text, before or after: a loop may run the
		// set -a again before an assignment that precedes it.
		z.allExport = true
	}
	for i := range s.Commands {
		z.command(&s.Commands[i], fr)
	}
}

func (z *analyzer) command(c *Command, fr frame) {
	fr.dir = composeDirs(fr.dir, dirState{dirs: c.Dirs, unknown: c.DirUnknown || z.dirLost})
	if !c.Decl {
		// X=1 cmd exports X to cmd; X=1 alone (and a loop's
		// variable) sets a shell variable, exported under set -a.
		exported := len(c.Argv) > 0 || z.allExport
		for _, as := range c.Env {
			z.judgeAssign(as, exported)
		}
	}
	var paths []PathArg
	net := NoNet
	for _, r := range c.Redirs {
		if !r.Target.Literal {
			// A dynamic path, or stdin text only known at run time
			// (it may carry a secret the program prints).
			z.unproven(r.Target.Pos, r.Target.Why)
		}
		if !r.Path {
			continue
		}
		paths = append(paths, PathArg{Word: r.Target, Access: r.Access})
		if r.Target.Literal && (strings.HasPrefix(r.Target.Value, "/dev/tcp/") || strings.HasPrefix(r.Target.Value, "/dev/udp/")) {
			net = Internet
		}
	}
	if len(c.Argv) == 0 {
		if len(paths) == 0 {
			return
		}
		p := shellProgram("redirect", nil, c.Pos, fr, net)
		addPaths(&p, paths)
		z.add(p, fr)
		return
	}
	if name := c.Argv[0]; name.Literal && z.funcs[name.Value] {
		z.unproven(name.Pos, whyFunctionCall)
	}
	if c.Decl {
		z.decl(c, fr, paths, net)
		return
	}
	if name := z.assignsUnsafeVar(c.Argv); name != "" {
		z.unproven(c.Pos, envStart+name+envEnd)
	}
	if w, ok := evaluatesSubscript(c.Argv); ok {
		z.unproven(w.Pos, whyArith)
	}
	if c.Stdin != nil && len(c.Argv) >= 2 && c.Argv[0].Literal && c.Argv[0].Value == "xargs" &&
		c.Argv[1].Literal && !strings.HasPrefix(c.Argv[1].Value, "-") {
		z.xargs(c, fr, paths, net)
		return
	}
	z.argv(c.Argv, c.Pos, fr, paths, net)
}

// xargs judges `echo WORDS | xargs CMD ARGS…` without options: xargs
// reads exactly WORDS from the pipe and runs CMD ARGS… WORDS once (they
// are few and plain: no quote, backslash or blank, see echoOutput).
func (z *analyzer) xargs(c *Command, fr frame, paths []PathArg, net Net) {
	p := shellProgram("xargs", c.Argv, c.Pos, fr, net)
	addPaths(&p, paths)
	z.add(p, fr)
	inner := frame{
		depth:      fr.depth + 1,
		wrappers:   append(slices.Clip(fr.wrappers), "xargs"),
		privileged: fr.privileged,
		dir:        fr.dir,
	}
	argv := append(slices.Clone(c.Argv[1:]), c.Stdin...)
	z.argv(argv, c.Argv[1].Pos, inner, nil, NoNet)
}

// shellProgram is a program the analyzer judges itself rather than the
// table (a bare redirect, a declaration builtin, xargs fed by echo): known,
// read-only by itself, with the frame's wrappers and privilege.
func shellProgram(name string, argv []Word, pos Pos, fr frame, net Net) Program {
	return Program{
		Name:       name,
		Argv:       argv,
		Pos:        pos,
		Known:      true,
		Rule:       name,
		Mutation:   "read",
		Financial:  "none",
		Net:        net,
		Wrappers:   fr.wrappers,
		Privileged: fr.privileged,
	}
}

// judgeAssign keeps the ceiling for an assignment the environment
// allowlist does not allow.
func (z *analyzer) judgeAssign(as Assign, exported bool) {
	v := as.Value
	if !z.k.shellVarAllowed(as.Name, &v, exported) {
		z.unproven(as.Pos, envStart+as.Name+envEnd)
	}
}

// declOptions are the option letters of a declaration builtin.
func declOptions(name string) string {
	switch name {
	case "export":
		return "fnp"
	case "readonly":
		return "aAfp"
	}
	return "aAfFgilnprtuxI" // declare, typeset, local
}

// decl judges a declaration builtin itself: its options, the variables
// it assigns (c.Env) and the names it declares, exports or unexports
// without a value. One that names no variable (export, declare -p,
// readonly, typeset -x) or is asked to print (-p, -f, -F) shows
// variables or functions, which hold secrets: it reads the environment.
func (z *analyzer) decl(c *Command, fr frame, paths []PathArg, net Net) {
	name := c.Argv[0].Value
	p := shellProgram(name, c.Argv, c.Pos, fr, net)
	opts := declOptions(name)
	exported := name == "export" || z.allExport
	unexport, prints, functions := false, false, false
	var names []Word
	operands := 0
	for _, w := range c.Argv[1:] {
		if !w.Literal {
			z.unproven(w.Pos, w.Why)
			p.Known, p.Why = false, w.Why+" in argument"
			operands++
			continue
		}
		if len(w.Value) < 2 || w.Value[0] != '-' && w.Value[0] != '+' || w.Value == "--" {
			if w.Value == "--" {
				continue
			}
			operands++
			if !strings.Contains(w.Value, "=") {
				names = append(names, w)
			}
			continue
		}
		for _, r := range w.Value[1:] {
			if !strings.ContainsRune(opts, r) {
				p.Known, p.Why = false, "unknown flag "+w.Value+" for "+name
			}
			switch {
			case r == 'x' && w.Value[0] == '-':
				exported = true
			case r == 'x' || r == 'n' && name == "export":
				unexport = true
			case r == 'p':
				prints = true
			case r == 'f' || r == 'F':
				functions = true
			}
		}
	}
	switch {
	case functions && name == "export":
		// export -f puts a function in the environment of every
		// later bash.
		p.Known, p.Why = false, "export -f exports a function"
	case prints || functions || operands == 0:
		p.Paths = append(p.Paths, PathArg{Word: Word{Value: EnvironPath, Literal: true, Pos: c.Pos}, Access: Read})
	}
	for _, as := range c.Env {
		z.judgeAssign(as, exported || unexport)
	}
	if !prints && !functions {
		for _, w := range names {
			// export NAME, declare +x NAME, local NAME: the value is
			// not given, the name still changes what programs see.
			if !isAssignment(w.Value+"=") || !z.k.shellVarAllowed(w.Value, nil, exported || unexport) {
				z.unproven(w.Pos, envStart+w.Value+envEnd)
			}
		}
	}
	addPaths(&p, paths)
	z.add(p, fr)
}

// EnvironPath is the path that stands for the process environment and
// the shell's variables: a program that prints them reads it (env,
// printenv, export -p, declare -p, set).
const EnvironPath = "/proc/self/environ"

// setsAllExport reports set -a or set -o allexport (also after builtin
// or command): every later assignment is exported.
func setsAllExport(argv []Word) bool {
	i := builtinStart(argv)
	if i >= len(argv) || !argv[i].Literal || argv[i].Value != "set" {
		return false
	}
	for _, w := range argv[i+1:] {
		if !w.Literal || w.Value == "allexport" {
			return true
		}
		if len(w.Value) > 1 && w.Value[0] == '-' && w.Value != "--" && strings.ContainsRune(w.Value, 'a') {
			return true
		}
	}
	return false
}

// add appends a program, placing its relative paths in every directory
// the shell may be in.
func (z *analyzer) add(p Program, fr frame) {
	p.Dirs, p.DirUnknown = fr.dir.dirs, fr.dir.unknown
	switch {
	case fr.dir.unknown:
		// Where the shell is is unknown: a relative path, and any
		// program that may read the directory without naming it (ls,
		// grep -r, rg, find, git), could reach anything.
		if !p.Known || p.RunsCode || !z.k.cwdFreeCommand(p.Name) || slices.ContainsFunc(p.Paths, func(pa PathArg) bool {
			return !pa.Word.Literal || !path.IsAbs(pa.Word.Value)
		}) {
			z.unproven(p.Pos, whyDirUnknown)
		}
	case fr.dir.dirs != nil:
		var out []PathArg
		for _, pa := range p.Paths {
			if !pa.Word.Literal || path.IsAbs(pa.Word.Value) {
				out = append(out, pa)
				continue
			}
			for _, d := range fr.dir.dirs {
				q := pa
				if d != "." {
					q.Word.Value = d + "/" + pa.Word.Value
				}
				out = append(out, q)
			}
		}
		p.Paths = out
	}
	z.a.Programs = append(z.a.Programs, p)
}

// argv classifies one command and what it wraps. paths and net are the
// effects of its redirects, which belong to the outermost program.
func (z *analyzer) argv(argv []Word, pos Pos, fr frame, paths []PathArg, net Net) {
	for i, w := range argv {
		switch {
		case w.Glob && i > 0 && (fr.dir.unknown || fr.dir.dirs != nil):
			// After a cd the pattern matches in another directory
			// than the one the proofs would check.
			z.unproven(w.Pos, "glob after cd")
		case w.Glob && w.GlobOption && i > 0 && !(argv[0].Literal && z.k.OptionsClosed(argv[0].Value)):
			z.unproven(w.Pos, "glob may expand to an option")
		case w.Quoted && i > 0 && argv[0].Literal && z.k.Prints(argv[0].Value):
			// echo "dir: $(pwd)": one operand, only printed. The
			// substitution's commands are programs of their own.
		case !w.Literal && !(w.Glob && i > 0):
			z.unproven(w.Pos, w.Why)
		}
	}
	if fr.depth > maxDepth {
		z.unproven(pos, whyDeep)
		return
	}
	if !argv[0].Literal {
		p := Program{
			Name:       argv[0].Value,
			Argv:       argv,
			Pos:        pos,
			Why:        whyDynamicName,
			Financial:  "none",
			Net:        net,
			Wrappers:   fr.wrappers,
			Privileged: fr.privileged,
		}
		addPaths(&p, paths)
		z.add(p, fr)
		return
	}
	c := z.k.Classify(argv)
	p := c.Program
	p.Pos = pos
	p.Wrappers = fr.wrappers
	p.Privileged = p.Privileged || fr.privileged
	p.Net = max(p.Net, net)
	addPaths(&p, paths)
	z.add(p, fr)
	if len(c.Inner) == 0 {
		return
	}
	inner := frame{
		depth:      fr.depth + 1,
		wrappers:   append(slices.Clip(fr.wrappers), c.Wrapper),
		privileged: p.Privileged,
		dir:        fr.dir,
	}
	for _, in := range joinScripts(c.Inner) {
		from := len(z.a.Programs)
		switch {
		case in.Script != nil:
			z.nested(*in.Script, inner)
			if c.Wrapper == "eval" && z.changedDir(from) {
				// eval runs in this shell: its cd moves the
				// commands that follow.
				z.dirLost = true
			}
		case len(in.Argv) > 0:
			z.argv(in.Argv, in.Argv[0].Pos, inner, nil, NoNet)
		}
		if in.Recursive {
			for i := from; i < len(z.a.Programs); i++ {
				p := &z.a.Programs[i]
				p.Paths = slices.Clone(p.Paths)
				for j := range p.Paths {
					p.Paths[j].Recursive = true
				}
			}
		}
	}
}

// nested analyzes a script a wrapper runs (sh -c, eval, …). Everything
// found in it is placed at the word that holds it, so every position
// stays inside the text Analyze was given.
func (z *analyzer) nested(w Word, fr frame) {
	if !w.Literal {
		z.unproven(w.Pos, w.Why)
		return
	}
	if fr.depth > maxDepth {
		z.unproven(w.Pos, whyDeep)
		return
	}
	s, err := Parse(w.Value)
	if err != nil {
		z.unproven(w.Pos, whyScriptSyntax)
		return
	}
	at := z.placer(w)
	progs := len(z.a.Programs)
	// Reasons are gathered apart so that dedup works on the final
	// positions.
	outer, seen, text := z.a.Unproven, z.seen, z.text
	z.a.Unproven, z.seen, z.text = nil, nil, w.Value
	z.script(s, fr)
	found := z.a.Unproven
	z.a.Unproven, z.seen, z.text = outer, seen, text
	for i := progs; i < len(z.a.Programs); i++ {
		p := &z.a.Programs[i]
		p.Pos = at(p.Pos)
		p.Argv = slices.Clone(p.Argv)
		for j := range p.Argv {
			p.Argv[j].Pos = at(p.Argv[j].Pos)
		}
		p.Paths = slices.Clone(p.Paths)
		for j := range p.Paths {
			p.Paths[j].Word.Pos = at(p.Paths[j].Word.Pos)
		}
	}
	for _, u := range found {
		z.unproven(at(u.Pos), u.Why)
	}
}

// placer maps positions in a nested script to the text that holds it.
// A script written in single quotes is that text verbatim, so its
// positions shift exactly; any other lands on the word itself.
func (z *analyzer) placer(w Word) func(Pos) Pos {
	whole := func(Pos) Pos { return w.Pos }
	off, ok := offsetOf(z.text, w.Pos)
	if !ok || strings.Contains(w.Value, "'") || !strings.HasPrefix(z.text[off:], "'"+w.Value+"'") {
		return whole
	}
	return func(p Pos) Pos {
		if p.Line == 1 {
			return Pos{Line: w.Pos.Line, Col: w.Pos.Col + p.Col}
		}
		return Pos{Line: w.Pos.Line + p.Line - 1, Col: p.Col}
	}
}

// offsetOf is the byte offset of a position in text.
func offsetOf(text string, p Pos) (int, bool) {
	off := 0
	for line := 1; line < p.Line; line++ {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return 0, false
		}
		off += i + 1
	}
	off += p.Col - 1
	return off, off >= 0 && off <= len(text)
}

// assignsUnsafeVar finds a builtin that sets a variable named by its
// arguments (read PATH, printf -v IFS, getopts o LD_PRELOAD) when the
// environment allowlist does not allow it. It errs towards finding one:
// any argument that is a variable name counts, exported under set -a.
func (z *analyzer) assignsUnsafeVar(argv []Word) string {
	i := builtinStart(argv)
	if i >= len(argv) || !argv[i].Literal {
		return ""
	}
	cmd := argv[i].Value
	switch cmd {
	case "read", "mapfile", "readarray", "getopts", "printf":
	default:
		return ""
	}
	for j, w := range argv[i+1:] {
		v := w.Value
		switch {
		case cmd == "printf" && strings.HasPrefix(v, "-v") && len(v) > 2:
			v = v[2:]
		case cmd == "printf" && v == "-v" && i+2+j < len(argv):
			continue
		case cmd == "printf" && (j == 0 || argv[i+j].Value != "-v"):
			// printf assigns only through -v.
			continue
		case len(v) > 2 && v[0] == '-':
			v = v[2:] // -aNAME
		}
		// The value comes from input or the format: unknown.
		if w.Literal && isAssignment(v+"=") && !z.k.shellVarAllowed(v, &Word{Why: cmd}, z.allExport) {
			return v
		}
	}
	return ""
}

// evaluatesSubscript finds a builtin argument that bash evaluates as
// arithmetic: a variable name with a subscript (read 'a[$(cmd)]', unset,
// printf -v, test -v, mapfile, getopts, wait -p), and any argument of let
// that is not a number. Such a subscript runs the code in it.
func evaluatesSubscript(argv []Word) (Word, bool) {
	i := builtinStart(argv)
	if i >= len(argv) || !argv[i].Literal {
		return Word{}, false
	}
	args := argv[i+1:]
	switch argv[i].Value {
	case "let":
		for _, w := range args {
			if w.Literal && strings.Trim(w.Value, "0123456789") != "" {
				return w, true
			}
		}
	case "read", "mapfile", "readarray", "getopts", "unset", "wait":
		for _, w := range args {
			if w.Literal && strings.ContainsRune(w.Value, '[') {
				return w, true
			}
		}
	case "printf", "test", "[":
		for j, w := range args {
			if !w.Literal || !strings.HasPrefix(w.Value, "-") {
				continue
			}
			name := ""
			switch {
			case argv[i].Value == "printf" && strings.HasPrefix(w.Value, "-v"):
				name = w.Value[2:]
			case w.Value == "-v" || w.Value == "-R":
			default:
				continue
			}
			if name == "" && j+1 < len(args) && args[j+1].Literal {
				name = args[j+1].Value
			}
			if strings.ContainsRune(name, '[') {
				return w, true
			}
		}
	}
	return Word{}, false
}

// joinScripts joins the words of one script slot (eval a b, watch a b)
// with spaces, as those commands do, into one script.
func joinScripts(in []Inner) []Inner {
	n := 0
	for _, x := range in {
		if x.Script != nil {
			n++
		}
	}
	if n < 2 {
		return in
	}
	var out []Inner
	var words []Word
	for _, x := range in {
		if x.Script == nil {
			out = append(out, x)
			continue
		}
		words = append(words, *x.Script)
	}
	joined := words[0]
	for _, w := range words[1:] {
		if !w.Literal {
			joined = w
			break
		}
		joined.Value += " " + w.Value
	}
	return append(out, Inner{Script: &joined})
}

// changedDir reports whether a program from index from on is a cd.
func (z *analyzer) changedDir(from int) bool {
	for _, p := range z.a.Programs[from:] {
		if _, isCd, _ := cdTarget(p.Argv); isCd {
			return true
		}
	}
	return false
}

// composeDirs is where a command of a nested script runs: its own
// directories taken from each directory the script starts in.
func composeDirs(outer, inner dirState) dirState {
	if outer.unknown || inner.unknown {
		return dirState{unknown: true}
	}
	if outer.dirs == nil {
		return inner
	}
	if inner.dirs == nil {
		return outer
	}
	for _, i := range inner.dirs {
		if i == ".." || strings.HasPrefix(i, "../") {
			// The nested shell starts where the outer cd took it,
			// through any symlink: its leading ".." is no longer
			// lexical (see dirState.cd).
			return dirState{unknown: true}
		}
	}
	var out []string
	for _, o := range outer.dirs {
		for _, i := range inner.dirs {
			d := i
			if !path.IsAbs(i) {
				d = path.Join(o, i)
			}
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return normDirs(out)
}

// addPaths appends redirect paths to a program and raises its mutation to
// cover them.
func addPaths(p *Program, paths []PathArg) {
	if len(paths) == 0 {
		return
	}
	p.Paths = append(slices.Clip(p.Paths), paths...)
	for _, pa := range paths {
		if pa.Word.Literal && HarmlessDevice(pa.Word.Value) {
			// Writing to /dev/null or a standard stream changes nothing.
			continue
		}
		if m := accessMutation(pa.Access); mutationRank(m) > mutationRank(p.Mutation) {
			p.Mutation = m
		}
	}
}

// HarmlessDevice reports the null device and the standard streams, paths
// whose reading or writing changes nothing and reaches nobody.
func HarmlessDevice(name string) bool {
	switch name {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin":
		return true
	}
	return strings.HasPrefix(name, "/dev/fd/")
}

// accessMutation is the mutation label of one access to a path. Overwrite
// is delete without pure deletion (spec §4.4): the old content is gone.
func accessMutation(a Access) string {
	switch a {
	case Read, Exec:
		return "read"
	case Create:
		return "create"
	case Update:
		return "update"
	default:
		return "delete"
	}
}

func mutationRank(m string) int {
	switch m {
	case "read":
		return 0
	case "create":
		return 1
	case "update":
		return 2
	case "delete":
		return 3
	}
	return -1
}
