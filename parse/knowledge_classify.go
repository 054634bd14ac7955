package parse

import (
	"path"
	"slices"
	"strings"
)

// handlerNames are the handlers a spec may name; each is Go code in
// knowledge_special.go for a language the table cannot describe.
var handlerNames = [...]string{"find", "sed", "awk", "shell", "tar", "dd", "git-config", "git-prints-config", "ssh", "builtin", "ip", "jq", "ps", "set", "export", "pager", "man", "date"}

// checkNames are the validators a flag's value may be given.
var checkNames = [...]string{"git-config", "http-method", "curl-form", "curl-urlencode", "curl-writeout", "rustc-print", "env-name"}

// rustcPrints are the rustc --print kinds that only describe the
// compiler or a target: rustc prints them and stops before compiling
// (rustc_driver's print_crate_info stops for every kind but link-args
// and native-static-libs, which print while linking). KIND=PATH writes
// a file and is not listed.
var rustcPrints = [...]string{
	"cfg", "sysroot", "target-libdir", "target-list", "target-cpus", "target-features",
	"relocation-models", "code-models", "tls-models", "stack-protector-strategies",
	"split-debuginfo", "deployment-target", "host-tuple", "calling-conventions",
	"all-target-specs-json", "target-spec-json", "check-cfg", "supported-crate-types",
}

// run accumulates one classification.
type run struct {
	k    *Knowledge
	prog Program
	why  string // first reason the form is unprovable

	mut          level
	net          netReach
	fin          financial
	runsCode     bool
	global       bool
	irreversible bool
	privileged   bool
	paths        []PathArg
	rule         []string

	wrapper string
	inner   []Inner

	// dir is the directory relative operands resolve against (git -C).
	dir *Word
	// form is the deepest table entry reached (git stash list).
	form *spec
	// into is where the Cwd access lands instead of . (unzip -d).
	into *Word
	// flagPaths counts the paths that came from flag arguments, which a
	// later -C must not silently re-anchor.
	relFlagPath bool
}

// hit is one option found in argv.
type hit struct {
	def      *flagDef
	name     string // as written, without a value
	value    Word
	hasValue bool
	negated  bool // git --no-foo
}

// parsed is one command level's argv, split.
type parsed struct {
	hits []hit
	ops  []Word
	// rest are the words a cmd or script* slot takes, from the command on.
	rest []Word
	// sub is the index in args of the subcommand word, or -1.
	sub int
	// slots are the operand slots in force after the flags.
	slots []slot
}

// Classify says what argv does, by the table. argv[0] is a command name
// or a path; every other word must be literal, a safe pattern
// ([Word.Glob]), or for a command that only prints ([Knowledge.Prints])
// a double-quoted dynamic word ([Word.Quoted]).
func (k *Knowledge) Classify(argv []Word) Classification {
	r := &run{k: k}
	r.prog.Argv = argv
	if len(argv) == 0 {
		r.fail("empty command")
		return r.finish()
	}
	r.prog.Name = argv[0].Value
	r.prog.Pos = argv[0].Pos
	for i, w := range argv {
		if !w.Literal && !(w.Glob && i > 0) && !(w.Quoted && i > 0 && argv[0].Literal && k.Prints(argv[0].Value)) {
			why := w.Why
			if why == "" {
				why = "dynamic word"
			}
			r.fail(why + " in argument")
			return r.finish()
		}
	}
	name, ok := k.commandName(argv[0].Value)
	if !ok {
		// ./script, bin/tool: a file of the workspace runs.
		r.runsCode = true
		r.addPath(argv[0], Exec, false)
		r.fail("runs " + argv[0].Value + ", not a known command")
		return r.finish()
	}
	r.prog.Name = name
	s := k.cmds[name]
	if s == nil {
		r.fail("unknown command " + name)
		return r.finish()
	}
	r.spec(s, argv[1:])
	return r.finish()
}

func (r *run) fail(why string) {
	if r.why == "" {
		r.why = why
	}
}

// spec classifies args against one table level.
func (r *run) spec(s *spec, args []Word) {
	r.rule = append(r.rule[:0], s.name)
	r.form = s
	switch s.Handler {
	case "find":
		r.find(s, args)
		return
	case "shell":
		r.shell(s, args)
		return
	case "tar":
		args = tarOldStyle(args)
	}
	if s.DefaultSub != "" && (len(args) == 0 || strings.HasPrefix(args[0].Value, "-")) {
		r.raise(s.Mutation, s.Net, s.Financial, s.RunsCode, s.Global, s.Irreversible, s.Privileged)
		r.spec(s.Sub[s.DefaultSub], args)
		return
	}
	p := r.parse(s, args)
	if r.why != "" {
		return
	}
	for _, h := range p.hits {
		r.applyHit(s, h)
	}
	readMode := false
	for _, h := range p.hits {
		if e := h.def.eff; e != nil && !h.negated && e.ReadMode {
			readMode = true
		}
	}
	if len(s.Sub) > 0 && p.sub >= 0 {
		// A parent's own effects hold for all its subcommands: docker
		// state is global whatever the subcommand.
		r.raise(s.Mutation, s.Net, s.Financial, s.RunsCode, s.Global, s.Irreversible, s.Privileged)
		subName := args[p.sub].Value
		sub := s.Sub[subName]
		if sub == nil {
			r.fail("unknown subcommand " + subName + " for " + s.name)
			return
		}
		r.spec(sub, args[p.sub+1:])
		return
	}
	if len(args) == 1 && len(p.hits) == 1 && p.hits[0].def.eff != nil && p.hits[0].def.eff.Final {
		// --help, --version: prints and exits before anything else.
		return
	}
	runsCode := s.RunsCode && !safeWith(s, p)
	if readMode {
		r.raise(lvlRead, s.Net, finUnset, runsCode, false, false, s.Privileged)
	} else {
		r.raise(s.Mutation, s.Net, s.Financial, runsCode, s.Global, s.Irreversible, s.Privileged)
	}
	if s.Unknown != "" {
		r.fail(s.Unknown)
	}
	supplied := false // a flag supplied the program (python -m, sed -e)
	for _, h := range p.hits {
		if e := h.def.eff; e != nil && e.hasArgs {
			supplied = true
		}
	}
	if s.Empty != "" && len(p.ops) == 0 && len(p.rest) == 0 && !supplied {
		r.fail(s.Empty)
	}
	recursive := s.Recursive
	var retarget optAccess
	cwd := s.Cwd
	if readMode {
		cwd = optAccess{}
	}
	for _, h := range p.hits {
		if e := h.def.eff; e != nil && !h.negated {
			recursive = recursive || e.Recursive
			retarget = maxOpt(retarget, e.Retarget)
			cwd = maxOpt(cwd, e.Cwd)
		}
	}
	for _, h := range p.hits {
		if e := h.def.eff; e != nil && !h.negated && e.NoCwd {
			cwd = optAccess{}
		}
	}
	follows, noFollow := s.Follows, false
	for _, h := range p.hits {
		if e := h.def.eff; e != nil && !h.negated {
			follows = follows || e.Follows
			noFollow = noFollow || e.NoFollow
		}
	}
	before := len(r.paths)
	r.operands(s, p, recursive, retarget)
	if follows && !noFollow && recursive {
		r.followLinks(before)
	}
	if s.ReadsEnv && len(p.rest) == 0 {
		r.readsEnv()
	}
	if cwd.set {
		dir := Word{Value: ".", Literal: true, Pos: r.prog.Pos}
		switch {
		case r.into != nil:
			dir = *r.into
		case r.dir != nil:
			dir = *r.dir
		}
		r.paths = append(r.paths, PathArg{Word: dir, Access: cwd.a, Recursive: recursive})
	}
	switch s.Handler {
	case "sed":
		r.sed(p)
	case "awk":
		r.awk(p)
	case "tar":
		r.tar(p)
	case "dd":
		r.dd(p)
	case "git-config":
		r.gitConfig(p)
	case "git-prints-config":
		r.gitPrintsConfig(p)
	case "builtin":
		r.builtin(p)
	case "ip":
		r.ip(p)
	case "jq":
		r.jq(p)
	case "man":
		r.man(p)
	case "date":
		r.date(p)
	case "ps":
		r.ps(p)
	case "set":
		r.set(p)
	case "export":
		r.export(p)
	case "pager":
		// less +CMD and more +CMD run CMD as the pager's first
		// command; on a terminal that may be ! (a shell command).
		for _, op := range p.ops {
			if strings.HasPrefix(op.Value, "+") {
				r.fail(r.prog.Name + " " + op.Value + " runs a pager command")
				return
			}
		}
	case "ssh":
		// OpenSSH reads options after the host too (ssh host -o
		// ProxyCommand=…); an option-like word there is not provably
		// part of the remote command.
		for _, op := range p.ops[min(1, len(p.ops)):] {
			if strings.HasPrefix(op.Value, "-") {
				r.fail("ssh option after the host")
				return
			}
		}
	}
}

// safeWith reports whether every option of s.SafeWith was given.
func safeWith(s *spec, p parsed) bool {
	if len(s.SafeWith) == 0 {
		return false
	}
	for _, want := range s.SafeWith {
		found := false
		for _, h := range p.hits {
			if !h.negated && slices.Contains(strings.Split(want, "|"), h.def.canon) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func maxOpt(a, b optAccess) optAccess {
	if !b.set || (a.set && a.a >= b.a) {
		return a
	}
	return b
}

// raise adds effects; effects never lower.
func (r *run) raise(m level, n netReach, f financial, runsCode, global, irreversible, privileged bool) {
	r.mut = max(r.mut, m)
	r.net = max(r.net, n)
	r.fin = max(r.fin, f)
	r.runsCode = r.runsCode || runsCode
	r.global = r.global || global
	r.irreversible = r.irreversible || irreversible
	r.privileged = r.privileged || privileged
}

// applyHit applies one option's effect, except what depends on operands.
func (r *run) applyHit(s *spec, h hit) {
	e := h.def.eff
	if e == nil || h.negated {
		return
	}
	if e.Final {
		r.rule = append(r.rule, h.def.canon)
		return
	}
	if !slices.Contains(r.rule, h.def.canon) {
		r.rule = append(r.rule, h.def.canon)
	}
	r.raise(e.Mutation, e.Net, e.Financial, e.RunsCode, e.Global, e.Irreversible, e.Privileged)
	if e.Unknown != "" {
		r.fail(e.Unknown)
	}
	v := h.value
	switch {
	case e.Dir:
		if !v.Literal || v.Value == "" {
			r.fail("empty directory for " + h.name)
			return
		}
		w := r.resolve(v)
		r.dir = &w
		r.addPath(w, Read, false)
	case e.Into:
		if !v.Literal || v.Value == "" {
			r.fail("empty directory for " + h.name)
			return
		}
		w := v
		r.into = &w
		if !path.IsAbs(w.Value) {
			r.relFlagPath = true
		}
	case e.Path.set:
		if v.Value != "-" && h.hasValue {
			r.flagPath(v, e.Path.a)
		}
	case e.AtPath.set:
		if rest, ok := strings.CutPrefix(v.Value, "@"); ok && rest != "-" {
			r.flagPath(Word{Value: rest, Literal: true, Pos: v.Pos}, e.AtPath.a)
		}
	}
	switch e.Check {
	case "git-config":
		if !r.k.safeGitKey(v.Value) {
			r.fail("git -c " + v.Value + " may run code")
		}
	case "http-method":
		// Any other method asks an arbitrary server to change state.
		if m := strings.ToUpper(v.Value); m != "GET" && m != "HEAD" && m != "OPTIONS" {
			r.irreversible = true
			r.mut = max(r.mut, lvlDelete)
		}
	case "curl-writeout":
		// curl 8.3's %output{file} in -w writes a file.
		if strings.Contains(v.Value, "%output{") {
			r.fail("curl -w %output writes a file")
		}
	case "rustc-print":
		if !inList(rustcPrints[:], v.Value) {
			r.fail("rustc --print " + v.Value + " is not modelled")
		}
	case "env-name":
		// env -u NAME removes a variable: the same allowlist as
		// setting it.
		if !r.k.envAllowed(v.Value, nil) {
			r.fail(r.prog.Name + " " + h.name + " " + v.Value + " removes a variable not on safe_env")
		}
	case "curl-form":
		// name=@file uploads a file, name=<file sends its content.
		if _, val, ok := strings.Cut(v.Value, "="); ok && len(val) > 1 && (val[0] == '@' || val[0] == '<') {
			file, _, _ := strings.Cut(val[1:], ";")
			if file != "-" {
				r.flagPath(Word{Value: file, Literal: true, Pos: v.Pos}, Read)
			}
		}
	case "curl-urlencode":
		// [name]@file reads the file, unless an = comes first.
		at, eq := strings.IndexByte(v.Value, '@'), strings.IndexByte(v.Value, '=')
		if at >= 0 && (eq < 0 || at < eq) && v.Value[at+1:] != "-" {
			r.flagPath(Word{Value: v.Value[at+1:], Literal: true, Pos: v.Pos}, Read)
		}
	}
}

// followLinks marks the recursive paths from index from on as followed
// through symbolic links. With none, the tool walks the working
// directory (grep -R x, rg -L x, du -L).
func (r *run) followLinks(from int) {
	found := false
	for i := from; i < len(r.paths); i++ {
		if r.paths[i].Recursive {
			r.paths[i].Follows = true
			found = true
		}
	}
	if !found {
		dir := Word{Value: ".", Literal: true, Pos: r.prog.Pos}
		if r.dir != nil {
			dir = *r.dir
		}
		r.paths = append(r.paths, PathArg{Word: dir, Access: Read, Recursive: true, Follows: true})
	}
}

// readsEnv records that the program shows the process environment.
func (r *run) readsEnv() {
	r.paths = append(r.paths, PathArg{Word: Word{Value: EnvironPath, Literal: true, Pos: r.prog.Pos}, Access: Read})
}

// flagPath records a path given as a flag's argument.
func (r *run) flagPath(w Word, a Access) {
	if w.Value == "" {
		return
	}
	if !path.IsAbs(w.Value) {
		r.relFlagPath = true
	}
	r.addPath(w, a, false)
}

// resolve anchors a relative operand at the -C directory.
func (r *run) resolve(w Word) Word {
	if r.dir == nil || path.IsAbs(w.Value) {
		return w
	}
	w.Value = r.dir.Value + "/" + w.Value
	return w
}

func (r *run) addPath(w Word, a Access, recursive bool) {
	if a == Exec {
		r.runsCode = true
	}
	r.paths = append(r.paths, PathArg{Word: w, Access: a, Recursive: recursive})
}

// operands assigns operands to slots and records their effects.
func (r *run) operands(s *spec, p parsed, recursive bool, retarget optAccess) {
	slots := p.slots
	pairs, extra := matchSlots(slots, p.ops)
	if extra {
		r.fail("too many arguments for " + s.name)
		return
	}
	if len(pairs) == 1 && pairs[0].slot.kind == slotPath && pairs[0].slot.access == Exec && len(p.rest) == 0 {
		switch pairs[0].word.Value {
		case "--version", "-v", "-V", "-version", "--help", "-h":
			// ruby --version: an interpreter the table does not parse
			// options for only prints.
			return
		}
	}
	for _, pr := range pairs {
		r.operand(s, pr.slot, pr.word, recursive, retarget)
	}
	if len(p.rest) > 0 {
		last := slots[len(slots)-1]
		r.wrapper = s.Wrapper
		if r.wrapper == "" {
			r.wrapper = s.name
		}
		if last.kind == slotCmd {
			// A copy: the caller may rewrite the inner words.
			r.inner = append(r.inner, Inner{Argv: slices.Clone(p.rest)})
		} else {
			vals := make([]string, len(p.rest))
			for i, w := range p.rest {
				vals[i] = w.Value
			}
			r.inner = append(r.inner, Inner{Script: &Word{Value: strings.Join(vals, " "), Literal: true, Pos: p.rest[0].Pos}})
		}
	}
	if r.dir != nil && r.relFlagPath {
		r.fail("relative flag path with a directory change")
	}
}

func (r *run) operand(s *spec, sl slot, w Word, recursive bool, retarget optAccess) {
	switch sl.kind {
	case slotPath:
		if sl.access == Exec && strings.HasPrefix(w.Value, "-") {
			// python -, perl -e: the program is not a file.
			r.fail(s.name + " " + w.Value + " does not run a file")
			return
		}
		if w.Value == "-" {
			return // stdin or stdout
		}
		a := sl.access
		if retarget.set && retarget.a > a {
			a = retarget.a
		}
		r.addPath(r.resolve(w), a, recursive)
	case slotURL:
		lower := strings.ToLower(w.Value)
		if !strings.HasPrefix(lower, "file:") {
			return
		}
		p := w.Value[len("file:"):]
		if rest, ok := strings.CutPrefix(p, "//"); ok {
			host, pth, _ := strings.Cut(rest, "/")
			if host != "" && !strings.EqualFold(host, "localhost") {
				r.fail("file url with a host")
				return
			}
			p = "/" + pth
		}
		r.addPath(Word{Value: p, Literal: true, Pos: w.Pos}, Read, false)
	case slotRemote:
		if strings.HasPrefix(strings.ToLower(w.Value), "file:") {
			r.operand(s, slot{kind: slotURL}, w, recursive, retarget)
			return
		}
		if isRemote(w.Value) {
			r.net = netInternet
			if sl.access > Read {
				r.irreversible = true
			}
			return
		}
		if w.Value == "-" {
			return
		}
		r.addPath(r.resolve(w), sl.access, recursive)
	case slotState:
		switch sl.access {
		case Read:
		case Create:
			r.mut = max(r.mut, lvlCreate)
		case Update:
			r.mut = max(r.mut, lvlUpdate)
		default:
			r.mut = max(r.mut, lvlDelete)
		}
	case slotScript:
		r.wrapper = s.Wrapper
		if r.wrapper == "" {
			r.wrapper = s.name
		}
		sw := w
		r.inner = append(r.inner, Inner{Script: &sw})
	}
}

// isRemote reports scp and rsync's host:path form: a colon before any
// slash. ./a:b and /a:b are local.
func isRemote(v string) bool {
	i := strings.IndexByte(v, ':')
	if i <= 0 {
		return false
	}
	return !strings.Contains(v[:i], "/")
}

type slotWord struct {
	slot slot
	word Word
}

// matchSlots pairs operands with slots: slots before the repeating one
// from the front, slots after it from the back (cp SRC... DEST).
func matchSlots(slots []slot, ops []Word) ([]slotWord, bool) {
	var out []slotWord
	rep := -1
	for i, sl := range slots {
		if sl.max < 0 && !sl.takesRest() {
			rep = i
		}
	}
	if rep < 0 {
		i := 0
		for _, sl := range slots {
			if sl.takesRest() || sl.kind == slotCmd {
				break
			}
			if i < len(ops) {
				out = append(out, slotWord{sl, ops[i]})
				i++
			}
		}
		return out, i < len(ops)
	}
	front, back := slots[:rep], slots[rep+1:]
	i := 0
	for _, sl := range front {
		if i < len(ops) {
			out = append(out, slotWord{sl, ops[i]})
			i++
		}
	}
	remaining := ops[i:]
	if len(remaining) > len(back) {
		n := len(remaining) - len(back)
		for _, w := range remaining[:n] {
			out = append(out, slotWord{slots[rep], w})
		}
		for j, w := range remaining[n:] {
			out = append(out, slotWord{back[j], w})
		}
	} else {
		// Too few for the back slots: the tool fails; read them as the
		// repeating slot, which is what they would be with one more.
		for _, w := range remaining {
			out = append(out, slotWord{slots[rep], w})
		}
	}
	return out, false
}

// restIndex is the operand count at which a rest-taking slot starts, or
// -1.
func restIndex(slots []slot) int {
	for i, sl := range slots {
		if sl.takesRest() || sl.kind == slotCmd {
			return i
		}
	}
	return -1
}

// parse splits args by the spec's option parser family.
func (r *run) parse(s *spec, args []Word) parsed {
	p := parsed{sub: -1, slots: s.Args}
	fs := s.flags
	fam := s.Parser
	permute := fam.permutes()
	if s.Permute != nil {
		permute = *s.Permute
	}
	abbrev := fam.abbreviates()
	if s.Abbrev != nil {
		abbrev = *s.Abbrev
	}
	hasSub := len(s.Sub) > 0
	done := fam == famNone
	replaced := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		a := w.Value
		if !done && a == "--" && fam != famSingle {
			done = true
			continue
		}
		if s.ResponseFiles && strings.HasPrefix(a, "@") {
			r.fail(s.name + " " + a + " reads more arguments from a file")
			return p
		}
		isOpt := !done && len(a) > 1 && a[0] == '-'
		if !isOpt {
			// An operand.
			if hasSub {
				p.sub = i
				return p
			}
			at := restIndex(p.slots)
			if at >= 0 && len(p.ops) == at {
				if s.EnvAssign && isAssignment(a) {
					name, value, _ := strings.Cut(a, "=")
					if !r.k.envAllowed(name, &Word{Value: value, Literal: true}) {
						r.fail(s.name + " sets " + name)
						return p
					}
					continue
				}
				p.rest = args[i:]
				return p
			}
			p.ops = append(p.ops, w)
			if !permute {
				done = true
			}
			continue
		}
		var consumed int
		var why string
		before := len(p.hits)
		switch fam {
		case famGo:
			p.hits, consumed, why = parseGo(p.hits, fs, args, i)
		case famSingle:
			p.hits, consumed, why = parseSingle(p.hits, fs, args, i)
		default:
			if strings.HasPrefix(a, "--") {
				if fam == famPOSIX {
					why = "unknown flag " + a
				} else {
					p.hits, consumed, why = parseLong(p.hits, fs, fam, abbrev, args, i)
				}
			} else {
				p.hits, consumed, why = parseShort(p.hits, fs, args, i)
			}
		}
		hs := p.hits[before:]
		if why != "" {
			r.fail(why + " for " + s.name)
			return p
		}
		i += consumed
		for _, h := range hs {
			if e := h.def.eff; e != nil && e.hasArgs && !h.negated {
				// Several flags may each replace the slots: the worst
				// reading wins, whatever their order.
				if !replaced || slotsSeverity(e.Args) >= slotsSeverity(p.slots) {
					p.slots = e.Args
					replaced = true
				}
			}
		}
		for _, h := range hs {
			if e := h.def.eff; e != nil && e.Stop {
				done = true
			}
		}
	}
	return p
}

func slotsSeverity(slots []slot) int {
	worst := 0
	for _, sl := range slots {
		worst = max(worst, sl.severity())
	}
	return worst
}

// isAssignment reports NAME=VALUE with a shell variable name.
func isAssignment(a string) bool {
	eq := strings.IndexByte(a, '=')
	if eq <= 0 {
		return false
	}
	for i := 0; i < eq; i++ {
		c := a[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func attached(w Word, v string) Word {
	return Word{Value: v, Literal: true, Pos: w.Pos}
}

// parseShort reads -abc, -n5, -n 5 (getopt).
func parseShort(hs []hit, fs *flagSet, args []Word, i int) ([]hit, int, string) {
	w := args[i]
	a := w.Value
	if fs.digits != nil && allDigits(a[1:]) {
		return append(hs, hit{def: fs.digits, name: a, value: attached(w, a[1:]), hasValue: true}), 0, ""
	}
	consumed := 0
	for j := 1; j < len(a); j++ {
		c := a[j]
		def := fs.short[c]
		if def == nil {
			return hs, 0, "unknown flag -" + string(rune(c))
		}
		h := hit{def: def, name: a[j-1 : j+1]}
		if j > 1 {
			h.name = "-" + a[j:j+1]
		}
		switch def.arg {
		case argRequired:
			if j+1 < len(a) {
				h.value, h.hasValue = attached(w, a[j+1:]), true
			} else if i+1 < len(args) {
				h.value, h.hasValue = args[i+1], true
				consumed = 1
			} else {
				return hs, 0, "flag " + h.name + " needs an argument"
			}
			j = len(a)
		case argOptional:
			if j+1 < len(a) {
				h.value, h.hasValue = attached(w, a[j+1:]), true
			}
			j = len(a)
		case argTwo:
			if j+1 < len(a) || i+2 >= len(args) {
				return hs, 0, "flag " + h.name + " needs two separate arguments"
			}
			h.value, h.hasValue = args[i+2], true
			consumed = 2
		}
		hs = append(hs, h)
	}
	return hs, consumed, ""
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseLong reads --name, --name=value, --name value, abbreviations and,
// for git, --no-name.
func parseLong(hs []hit, fs *flagSet, fam family, abbrev bool, args []Word, i int) ([]hit, int, string) {
	w := args[i]
	name, val, has := strings.Cut(w.Value, "=")
	def, why := fs.findLong(name, abbrev)
	negated := false
	if def == nil && why == "" && fam == famGit && strings.HasPrefix(name, "--no-") {
		def, why = fs.findLong("--"+name[len("--no-"):], abbrev)
		if def != nil {
			if def.arg != argNone || has {
				return hs, 0, "unknown flag " + name
			}
			negated = true
		}
	}
	if why != "" {
		return hs, 0, why
	}
	if def == nil {
		return hs, 0, "unknown flag " + name
	}
	h := hit{def: def, name: name, negated: negated}
	consumed := 0
	switch def.arg {
	case argNone:
		if has {
			return hs, 0, "flag " + name + " takes no argument"
		}
	case argRequired:
		if has {
			h.value, h.hasValue = attached(w, val), true
		} else if i+1 < len(args) {
			h.value, h.hasValue = args[i+1], true
			consumed = 1
		} else {
			return hs, 0, "flag " + name + " needs an argument"
		}
	case argOptional:
		if has {
			h.value, h.hasValue = attached(w, val), true
		}
	case argTwo:
		if has || i+2 >= len(args) {
			return hs, 0, "flag " + name + " needs two separate arguments"
		}
		h.value, h.hasValue = args[i+2], true
		consumed = 2
	}
	return append(hs, h), consumed, ""
}

// findLong finds an exact long option, or the one option an unambiguous
// prefix names.
func (fs *flagSet) findLong(name string, abbrev bool) (*flagDef, string) {
	if d := fs.long[name]; d != nil {
		return d, ""
	}
	if !abbrev || len(name) < 3 {
		return nil, ""
	}
	var found *flagDef
	lo, _ := slices.BinarySearch(fs.longs, name)
	for _, n := range fs.longs[lo:] {
		if !strings.HasPrefix(n, name) {
			break
		}
		d := fs.long[n]
		if found != nil && found != d {
			return nil, "ambiguous flag " + name
		}
		found = d
	}
	return found, ""
}

// parseGo reads Go flag package options.
func parseGo(hs []hit, fs *flagSet, args []Word, i int) ([]hit, int, string) {
	w := args[i]
	a := w.Value
	body := strings.TrimPrefix(a, "-")
	body = strings.TrimPrefix(body, "-")
	if body == "" || body[0] == '-' || body[0] == '=' {
		return hs, 0, "bad flag " + a
	}
	name, val, has := strings.Cut(body, "=")
	name = "-" + name
	def := fs.long[name]
	if def == nil {
		def, _ = fs.matchPrefix(name)
	}
	if def == nil {
		return hs, 0, "unknown flag " + name
	}
	h := hit{def: def, name: name}
	if has {
		h.value, h.hasValue = attached(w, val), true
		return append(hs, h), 0, ""
	}
	if def.arg == argRequired {
		if i+1 >= len(args) {
			return hs, 0, "flag " + name + " needs an argument"
		}
		h.value, h.hasValue = args[i+1], true
		return append(hs, h), 1, ""
	}
	return append(hs, h), 0, ""
}

// parseSingle reads whole-word one-dash options (-name value, -std=c11,
// -Wall, -Ipath).
func parseSingle(hs []hit, fs *flagSet, args []Word, i int) ([]hit, int, string) {
	w := args[i]
	a := w.Value
	take := func(def *flagDef, name string) ([]hit, int, string) {
		h := hit{def: def, name: name}
		if def.arg == argRequired {
			if i+1 >= len(args) {
				return hs, 0, "flag " + name + " needs an argument"
			}
			h.value, h.hasValue = args[i+1], true
			return append(hs, h), 1, ""
		}
		return append(hs, h), 0, ""
	}
	if def := fs.long[a]; def != nil {
		return take(def, a)
	}
	if name, val, has := strings.Cut(a, "="); has {
		if def := fs.long[name]; def != nil && def.arg != argNone {
			return append(hs, hit{def: def, name: name, value: attached(w, val), hasValue: true}), 0, ""
		}
	}
	if len(a) > 2 {
		if def := fs.long[a[:2]]; def != nil && def.arg != argNone {
			return append(hs, hit{def: def, name: a[:2], value: attached(w, a[2:]), hasValue: true}), 0, ""
		}
	}
	if def, pre := fs.matchPrefix(a); def != nil {
		return append(hs, hit{def: def, name: pre, value: attached(w, a[len(pre):]), hasValue: a != pre}), 0, ""
	}
	return hs, 0, "unknown flag " + a
}

// matchPrefix finds the longest pattern that a begins with, and the
// pattern's prefix.
func (fs *flagSet) matchPrefix(a string) (*flagDef, string) {
	var best *prefixDef
	for i := range fs.prefix {
		p := &fs.prefix[i]
		if strings.HasPrefix(a, p.prefix) && (best == nil || len(p.prefix) > len(best.prefix)) {
			best = p
		}
	}
	if best == nil {
		return nil, ""
	}
	return best.def, best.prefix
}

// finish turns the accumulated effects into a Classification.
func (r *run) finish() Classification {
	p := r.prog
	p.Paths = r.paths
	p.Rule = strings.Join(r.rule, " ")
	p.Privileged = r.privileged
	c := Classification{Program: p, Wrapper: r.wrapper, Inner: r.inner}
	if r.why != "" {
		// Unknown keeps every label at its worst.
		c.Program.Known = false
		c.Program.Why = r.why
		c.Program.Mutation = "delete"
		c.Program.Net = Internet
		c.Program.RunsCode = true
		c.Program.Global = true
		c.Program.Financial = "direct"
		c.Program.Irreversible = true
		return c
	}
	m := max(r.mut, lvlRead)
	for _, pa := range r.paths {
		switch pa.Access {
		case Create:
			m = max(m, lvlCreate)
		case Update:
			m = max(m, lvlUpdate)
		case Overwrite, Delete, Exec:
			m = max(m, lvlDelete)
		}
	}
	fin, net, global, irreversible := max(r.fin, finNone), r.net, r.global, r.irreversible
	if r.runsCode {
		// Code the program did not write can do anything the account
		// can (spec §3.1 and §3.2: code execution is delete and
		// account-wide): every label is at its ceiling. Known still
		// says what runs, so an established sandbox may narrow it.
		m = lvlDelete
		net, global, irreversible = netInternet, true, true
		fin = max(fin, finIndirect)
	}
	c.Program.Known = true
	if g := r.gitRepo(); g != nil {
		c.Program.Git = g
		if g.Standing && m > lvlRead {
			// Refs, the index, remotes and config are standing
			// configuration of the repository (spec §3.2).
			global = true
		}
	}
	c.Program.Mutation = m.String()
	c.Program.Net = net.net()
	c.Program.RunsCode = r.runsCode
	c.Program.Global = global
	c.Program.Financial = financialNames[fin]
	c.Program.Irreversible = irreversible
	return c
}

// safeGitKey reports whether git -c name=value is in the allowlist. Keys
// compare case-insensitively, as git's section and variable names do.
func (k *Knowledge) safeGitKey(kv string) bool {
	key, val, has := strings.Cut(kv, "=")
	key = strings.ToLower(key)
	for _, p := range k.safeGitConfig {
		pk, pv, pHas := strings.Cut(p, "=")
		pk = strings.ToLower(pk)
		keyOK := key == pk
		if pre, ok := strings.CutSuffix(pk, "*"); ok {
			keyOK = strings.HasPrefix(key, pre) && !strings.ContainsAny(key[len(pre):], ".")
		}
		if !keyOK {
			continue
		}
		if !pHas || (has && strings.EqualFold(val, pv)) {
			return true
		}
	}
	return false
}
