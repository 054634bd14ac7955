package parse

import (
	"path"
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

// sed checks sed's program: w and W and s///w write files, r and R read
// them, e and s///e run commands.
func (r *run) sed(p parsed) {
	// The file operands were read (or, with -i, overwritten) by their
	// slots; only the program is left to check.
	scripts := p.values("-e")
	if len(scripts) == 0 {
		if len(p.ops) == 0 {
			r.fail("sed without a program")
			return
		}
		scripts = p.ops[:1]
	}
	files := p.ops
	if len(p.values("-e")) == 0 {
		files = p.ops[1:]
	}
	if !r.sedBackups(p, files) {
		return
	}
	var texts []string
	for _, w := range scripts {
		texts = append(texts, w.Value)
	}
	prog := strings.Join(texts, "\n")
	reads, writes, why := sedProgram(prog)
	if why != "" {
		r.fail(why)
		return
	}
	pos := scripts[0].Pos
	for _, f := range reads {
		if f != "/dev/stdin" {
			r.addPath(Word{Value: f, Literal: true, Pos: pos}, Read, false)
		}
	}
	for _, f := range writes {
		r.rule = append(r.rule, "w")
		r.addPath(Word{Value: f, Literal: true, Pos: pos}, Overwrite, false)
	}
}

// sedBackups adds the backup files that -iSUFFIX makes beside each edited
// file. GNU sed names a backup FILE+SUFFIX, or, when SUFFIX holds a *,
// SUFFIX with each * replaced by FILE's base name; a SUFFIX holding a /
// puts the backup in another directory (sed -i'/root/.ssh/*' writes
// /root/.ssh/FILE), so such a suffix, or one not known from the text,
// makes the call unprovable. It reports whether the call is still
// provable.
func (r *run) sedBackups(p parsed, files []Word) bool {
	for _, suffix := range p.values("-i") {
		if suffix.Value == "" && suffix.Literal {
			continue
		}
		switch {
		case !suffix.Literal:
			r.fail("sed -i with a backup suffix not known from the text")
			return false
		case strings.Contains(suffix.Value, "/"):
			r.fail("sed -i with a backup suffix holding / writes the backup into another directory")
			return false
		}
		for _, f := range files {
			if !f.Literal {
				// The file's own slot already makes the call unprovable.
				continue
			}
			backup := f.Value + suffix.Value
			if strings.Contains(suffix.Value, "*") {
				backup = path.Join(path.Dir(f.Value), strings.ReplaceAll(suffix.Value, "*", path.Base(f.Value)))
			}
			r.addPath(Word{Value: backup, Literal: true, Pos: suffix.Pos}, Overwrite, false)
		}
	}
	return true
}

// sedProgram parses a GNU sed program far enough to find every command.
func sedProgram(src string) (reads, writes []string, why string) {
	i := 0
	n := len(src)
	// toEOL reads a file name or text: the rest of the line.
	toEOL := func() string {
		start := i
		for i < n && src[i] != '\n' {
			i++
		}
		return src[start:i]
	}
	skipBlank := func() {
		for i < n && (src[i] == ' ' || src[i] == '\t') {
			i++
		}
	}
	// delimited reads up to an unescaped delimiter.
	delimited := func(d byte) bool {
		for i < n {
			c := src[i]
			switch {
			case c == '\\':
				i += 2
				continue
			case c == d:
				i++
				return true
			case c == '\n' && d != '\n':
				return false
			}
			i++
		}
		return false
	}
	address := func() bool {
		switch {
		case i < n && src[i] >= '0' && src[i] <= '9':
			for i < n && (src[i] >= '0' && src[i] <= '9' || src[i] == '~') {
				i++
			}
		case i < n && src[i] == '$':
			i++
		case i < n && src[i] == '/':
			i++
			if !delimited('/') {
				return false
			}
			for i < n && (src[i] == 'I' || src[i] == 'M') {
				i++
			}
		case i+1 < n && src[i] == '\\':
			d := src[i+1]
			i += 2
			if d == '\n' || d == '\\' || !delimited(d) {
				return false
			}
			for i < n && (src[i] == 'I' || src[i] == 'M') {
				i++
			}
		}
		return true
	}
	endCmd := func() bool {
		skipBlank()
		if i >= n || src[i] == ';' || src[i] == '\n' || src[i] == '}' || src[i] == '#' {
			return true
		}
		return false
	}
	for i < n {
		for i < n && strings.IndexByte(" \t\n;", src[i]) >= 0 {
			i++
		}
		if i >= n {
			break
		}
		switch src[i] {
		case '#':
			toEOL()
			continue
		case '}':
			i++
			continue
		}
		if !address() {
			return nil, nil, "sed address not understood"
		}
		skipBlank()
		if i < n && src[i] == ',' {
			i++
			skipBlank()
			if i < n && (src[i] == '+' || src[i] == '~') {
				i++
			}
			if !address() {
				return nil, nil, "sed address not understood"
			}
		}
		skipBlank()
		for i < n && (src[i] == '!' || src[i] == ' ') {
			i++
		}
		if i >= n {
			return nil, nil, "sed program ends after an address"
		}
		c := src[i]
		i++
		switch c {
		case '{':
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
			if !endCmd() {
				return nil, nil, "sed command " + string(c) + " not understood"
			}
		case 'l', 'L', 'q', 'Q':
			skipBlank()
			for i < n && src[i] >= '0' && src[i] <= '9' {
				i++
			}
			if !endCmd() {
				return nil, nil, "sed command " + string(c) + " not understood"
			}
		case ':', 'b', 't', 'T', 'v':
			skipBlank()
			for i < n && src[i] != ';' && src[i] != '\n' {
				i++
			}
		case 'a', 'i', 'c':
			// Text to the end of the line; a backslash-newline continues
			// it onto the next line.
			for i < n && src[i] != '\n' {
				if src[i] == '\\' {
					i++
				}
				i++
			}
		case 'r', 'R':
			skipBlank()
			reads = append(reads, toEOL())
		case 'w', 'W':
			skipBlank()
			writes = append(writes, toEOL())
		case 'e':
			return nil, nil, "sed e runs a command"
		case 's':
			if i >= n || src[i] == '\\' || src[i] == '\n' {
				return nil, nil, "sed s delimiter not understood"
			}
			d := src[i]
			i++
			// Two delimited parts: the regexp, then the replacement.
			pattern := delimited(d)
			if !pattern || !delimited(d) {
				return nil, nil, "sed s command not terminated"
			}
		flags:
			for i < n {
				switch f := src[i]; {
				case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || f >= '0' && f <= '9':
					i++
				case f == 'e':
					return nil, nil, "sed s///e runs a command"
				case f == 'w':
					i++
					skipBlank()
					writes = append(writes, toEOL())
					break flags
				default:
					break flags
				}
			}
			if !endCmd() {
				return nil, nil, "sed s flags not understood"
			}
		case 'y':
			if i >= n || src[i] == '\\' || src[i] == '\n' {
				return nil, nil, "sed y delimiter not understood"
			}
			d := src[i]
			i++
			source := delimited(d)
			if !source || !delimited(d) || !endCmd() {
				return nil, nil, "sed y command not understood"
			}
		default:
			return nil, nil, "unknown sed command " + string(c)
		}
	}
	for _, w := range writes {
		if w == "" {
			return nil, nil, "sed w without a file"
		}
	}
	return reads, writes, ""
}

// awkForbidden are words whose presence anywhere in an awk program, even
// inside a string, makes it unprovable: they run commands, read other
// files, or change which files are read. Searching the raw text instead of
// tokens means no lexer disagreement (regex or division?) can hide one.
var awkForbidden = [...]string{"system", "getline", "close", "fflush", "ARGV", "ARGC", "@", "PROCINFO"}

// awk checks an awk program and reads its file operands.
func (r *run) awk(p parsed) {
	progs := p.values("-e")
	files := p.ops
	if len(progs) == 0 {
		if len(p.ops) == 0 {
			r.fail("awk without a program")
			return
		}
		progs, files = p.ops[:1], p.ops[1:]
	}
	for _, w := range progs {
		if why := awkProgram(w.Value); why != "" {
			r.fail(why)
			return
		}
		if strings.Contains(w.Value, "ENVIRON") {
			r.readsEnv()
		}
	}
	access := Read
	if len(p.values("-i")) > 0 {
		// -i inplace (the only include the check lets through).
		access = Overwrite
		r.rule = append(r.rule, "-i inplace")
	}
	for _, f := range files {
		if isAssignment(f.Value) || f.Value == "-" {
			continue
		}
		r.addPath(f, access, false)
	}
}

// awkProgram reports why an awk program is unprovable, or "".
func awkProgram(src string) string {
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c != '\n' && c != '\t' && (c < ' ' || c > '~') {
			return "awk program with control or non-ASCII bytes"
		}
	}
	// A backslash-newline could split a word; awk rejoins it.
	flat := strings.ReplaceAll(src, "\\\n", "")
	for _, w := range awkForbidden {
		if strings.Contains(flat, w) {
			return "awk program uses " + w
		}
	}
	// | outside || is a pipe to or from a command.
	for i := 0; i < len(flat); i++ {
		if flat[i] != '|' {
			continue
		}
		if i+1 < len(flat) && flat[i+1] == '|' {
			i++
			continue
		}
		return "awk program uses a pipe"
	}
	// A > after print (or printf) in the same statement is output to a
	// file. Statements run left to right, so a > before the first print
	// of a line is a comparison. A print statement continues onto the
	// next line after a comma, && or ||, or past a comment, so the search
	// does too.
	pending := false
	for _, line := range strings.Split(flat, "\n") {
		seg := line
		if !pending {
			i := strings.Index(line, "print")
			if i < 0 {
				continue
			}
			seg = line[i:]
		}
		if strings.Contains(seg, ">") {
			return "awk program may print to a file"
		}
		t := strings.TrimRight(seg, " \t")
		pending = strings.Contains(seg, "#") || strings.HasSuffix(t, ",") ||
			strings.HasSuffix(t, "&&") || strings.HasSuffix(t, "||") || strings.HasSuffix(t, "\\")
	}
	return ""
}

// tarArgLetters are the bundled old-style letters that take an argument,
// in order, from the following words (tar cf a.tar, tar xzfC a.tar dir).
const tarArgLetters = "fbCTXgKLNVH"

// tarOldStyle rewrites tar's bundled first word (tar czf a.tgz x) into
// ordinary short options.
func tarOldStyle(args []Word) []Word {
	if len(args) == 0 || args[0].Value == "" || args[0].Value[0] == '-' {
		return args
	}
	letters := args[0].Value
	for i := 0; i < len(letters); i++ {
		c := letters[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return args
		}
	}
	out := make([]Word, 0, len(args)+len(letters))
	next := 1
	for i := 0; i < len(letters); i++ {
		c := letters[i]
		out = append(out, Word{Value: "-" + string(rune(c)), Literal: true, Pos: args[0].Pos})
		if strings.IndexByte(tarArgLetters, c) >= 0 && next < len(args) {
			out = append(out, args[next])
			next++
		}
	}
	return append(out, args[next:]...)
}

// tar derives the archive's and members' access from the mode.
func (r *run) tar(p parsed) {
	var mode string
	for _, m := range []string{"-c", "-x", "-t", "-r", "-u", "-A", "-d", "--delete", "--test-label"} {
		if p.hasHit(m) {
			if mode != "" {
				r.fail("tar with two modes")
				return
			}
			mode = m
		}
	}
	if mode == "" {
		r.fail("tar without a mode")
		return
	}
	r.rule = append(r.rule, mode)
	archive := Read
	switch mode {
	case "-c":
		archive = Overwrite
	case "-r", "-u", "-A", "--delete":
		archive = Update
	}
	for _, f := range p.values("-f") {
		if isRemote(f.Value) && !p.hasHit("--force-local") {
			r.fail("tar archive on a remote host")
			return
		}
		if f.Value != "-" {
			r.addPath(f, archive, false)
		}
	}
	switch mode {
	case "-c", "-r", "-u":
		remove := p.hasHit("--remove-files")
		for _, op := range p.ops {
			a := Read
			if remove {
				a = Delete
			}
			r.addPath(r.resolve(op), a, true)
			// -h archives what each symbolic link points to.
			r.paths[len(r.paths)-1].Follows = p.hasHit("-h")
		}
	case "-A":
		for _, op := range p.ops {
			r.addPath(r.resolve(op), Read, false)
		}
	case "-x":
		if p.hasHit("-P") {
			r.fail("tar -P extracts absolute names")
			return
		}
		dest := Word{Value: ".", Literal: true, Pos: r.prog.Pos}
		if r.dir != nil {
			dest = *r.dir
		}
		a := Overwrite
		if p.hasHit("-k") {
			a = Create
		}
		r.addPath(dest, a, true)
	case "-d":
		dest := Word{Value: ".", Literal: true, Pos: r.prog.Pos}
		if r.dir != nil {
			dest = *r.dir
		}
		r.addPath(dest, Read, true)
	}
}

// dd reads dd's KEY=VALUE operands.
func (r *run) dd(p parsed) {
	for _, op := range p.ops {
		key, val, ok := strings.Cut(op.Value, "=")
		if !ok {
			r.fail("dd operand " + op.Value + " not understood")
			return
		}
		w := Word{Value: val, Literal: true, Pos: op.Pos}
		switch key {
		case "if":
			r.addPath(w, Read, false)
		case "of":
			r.addPath(w, Overwrite, false)
		case "bs", "ibs", "obs", "cbs", "count", "skip", "seek", "iseek", "oseek", "status", "conv", "iflag", "oflag":
		default:
			r.fail("unknown dd operand " + key)
			return
		}
	}
}

// gitConfig tells reading git config from writing it, in both the
// --get style and the git 2.46 subcommand style.
func (r *run) gitConfig(p parsed) {
	write := false
	ops := p.ops
	if len(ops) > 0 {
		switch ops[0].Value {
		case "list", "get":
			ops = nil
		case "set", "unset":
			write = true
			ops = ops[1:]
		case "rename-section", "remove-section":
			r.fail("git config " + ops[0].Value + " is not modelled")
			return
		case "edit":
			r.fail("git config edit runs an editor")
			return
		}
	}
	switch {
	case p.hasHit("-e"):
		r.fail("git config --edit runs an editor")
		return
	case p.hasHit("--rename-section", "--remove-section"):
		r.fail("git config section edits are not modelled")
		return
	case p.hasHit("--unset", "--unset-all", "--replace-all", "--add"):
		write = true
	case p.hasHit("--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--get-color", "--get-colorbool"):
	case len(ops) >= 2:
		write = true
	}
	if !write {
		return
	}
	// The key written must be one git -c may set too: core.fsmonitor,
	// core.pager, alias.*, filters and hooks paths make later git
	// commands run what the value names.
	if len(ops) > 0 && !r.k.safeGitKey(ops[0].Value) {
		r.fail("git config " + ops[0].Value + " may make git run code")
		return
	}
	r.rule = append(r.rule, "set")
	r.mut = max(r.mut, lvlUpdate)
	files := p.values("-f")
	switch {
	case len(files) > 0:
		// The -f paths are already recorded; upgraded below.
	case p.hasHit("--global", "--system"):
		r.global = true
	default:
		// The repository's own config: later git commands read it, and
		// keys like core.fsmonitor make them run code. That is why every
		// git command that can honour such keys is RunsCode.
		dir := Word{Value: ".", Literal: true, Pos: r.prog.Pos}
		if r.dir != nil {
			dir = *r.dir
		}
		r.addPath(dir, Update, false)
	}
	// Flag paths of reads became reads; writes upgrade them above.
	for i := range r.paths {
		for _, f := range files {
			if r.paths[i].Word == f && r.paths[i].Access == Read {
				r.paths[i].Access = Update
			}
		}
	}
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

// jq reports a program that reads the environment (env, $ENV). A
// program read from a file (-f, --from-file, or a /dev/fd pipe from a
// process substitution) is one narrowd cannot see: it may read the
// environment, and yq's may load() other files.
func (r *run) jq(p parsed) {
	prog := ""
	switch {
	case p.hasHit("-f", "--from-file"):
		if r.prog.Name == "yq" {
			r.fail("yq --from-file runs a program narrowd cannot read")
			return
		}
		r.readsEnv()
		return
	case len(p.ops) > 0:
		prog = p.ops[0].Value
	}
	if r.prog.Name == "yq" && strings.Contains(prog, "load") {
		r.fail("yq load reads other files")
		return
	}
	if strings.Contains(prog, "env") || strings.Contains(prog, "ENV") {
		r.readsEnv()
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
