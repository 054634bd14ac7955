package parse

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// The command knowledge table is data: knowledge/*.toml, reviewed like
// code. Go code here only interprets it, and handlers finish the few
// languages no table can describe (find expressions, sed and awk programs).

//go:embed knowledge/*.toml
var knowledgeFiles embed.FS

// Knowledge is the compiled command knowledge table: for each command, its
// option parser, flags, subcommands and operands, and what each does. It is
// immutable once loaded and safe for concurrent use.
//
// What a Classification promises:
//   - Known is true only when the command, its subcommand, every flag and
//     every operand position are in the table. Otherwise Why says what was
//     not, and every label is at its ceiling.
//   - A program that runs code (RunsCode, or an Exec path) has every label
//     at its ceiling too: delete, internet, global, irreversible, at least
//     indirect spend. Known still says exactly what runs, so evidence from
//     narrowd's own sandbox may narrow it; nothing else should.
//   - Paths are literal words as written, relative to the working directory
//     (or to a -C style directory, already joined). "." with an access
//     stands for the repository or directory a program changes without
//     naming it (git commit, wget). /proc/self/environ stands for the
//     process environment (env, printenv, jq env).
//   - State that is not a path (branches, packages, processes, containers,
//     services, remote hosts) shows in Mutation, Global, Net and
//     Irreversible only.
//   - Wrappers describe themselves; the caller classifies Inner in turn and
//     carries Wrappers and Privileged inward, and marks the inner paths
//     recursive when Inner.Recursive is set.
type Knowledge struct {
	cmds map[string]*spec
	// safeEnv is the environment allowlist (see env.go): the only
	// variables a call may set, export or remove and stay provable.
	safeEnv []envRule
	// exportedLowercase are the lower-case names programs read from the
	// environment (http_proxy), which are never private to the shell.
	exportedLowercase []string
	// safeGitConfig are git config keys (or section.* prefixes, or
	// key=value pairs) that git -c may set.
	safeGitConfig []string
	// systemDirs are directories whose programs are the commands the table
	// names (/usr/bin/ls is ls; ./ls is not).
	systemDirs []string
	// gitRepo is what a git call may meet in its repository
	// (knowledge_git.go).
	gitRepo gitRepoPolicy
	// cwdFree are the commands that never read the working directory
	// unless a path operand names it: the only ones that stay provable
	// where the directory is unknown.
	cwdFree []string
}

// Classification is what the table says about one argv.
type Classification struct {
	// Program is the program argv[0] names, classified. For a wrapper it
	// describes the wrapper itself (sudo is Privileged); what the wrapper
	// runs is in Inner.
	Program Program
	// Wrapper is non-empty when argv[0] is a wrapper or code carrier
	// ("sudo", "env", "xargs", "sh -c", "find -exec").
	Wrapper string
	// Inner is what the wrapper runs, each to be classified or parsed in
	// turn by the caller, who carries Wrappers and Privileged inward.
	Inner []Inner
}

// Inner is one thing a wrapper runs: an argv or shell text.
type Inner struct {
	// Argv is a command to classify in turn.
	Argv []Word
	// Script is shell text to parse and analyze in turn.
	Script *Word
	// Recursive reports that the inner program's path arguments stand for
	// whole trees (find -exec rm {} + removes everything under the roots):
	// the caller must mark the inner program's paths recursive.
	Recursive bool
}

// tableFile is the shape of one knowledge TOML file.
type tableFile struct {
	Cmd     map[string]*spec `toml:"cmd"`
	SafeEnv []string         `toml:"safe_env"`
	// ExportedLowercase are NAME or PRE*SUF patterns.
	ExportedLowercase []string      `toml:"exported_lowercase"`
	SafeGitConfig     []string      `toml:"safe_git_config"`
	SystemDirs        []string      `toml:"system_dirs"`
	CwdFree           []string      `toml:"cwd_free"`
	GitRepo           *gitRepoTable `toml:"git_repo"`
	// FlagGroups are shared flag lists (git's diff and revision options)
	// that commands in the same file include by name.
	FlagGroups map[string][]flagName `toml:"flag_groups"`
}

// LoadKnowledge compiles one TOML knowledge table. Decoding is strict: an
// unknown key or value is an error carrying its line.
func LoadKnowledge(data []byte) (*Knowledge, error) {
	k := &Knowledge{cmds: map[string]*spec{}}
	if err := k.add("knowledge", data); err != nil {
		return nil, err
	}
	return k, nil
}

// DefaultKnowledge is the embedded table, knowledge/*.toml, compiled once
// per process and shared: it is immutable, and its source is compiled into
// the binary, so every engine (a reload's too) would compile the same
// table, at tens of milliseconds and 15 MB of garbage each.
func DefaultKnowledge() (*Knowledge, error) { return defaultKnowledge() }

var defaultKnowledge = sync.OnceValues(compileDefaultKnowledge)

// compileDefaultKnowledge decodes the files concurrently (TOML decoding
// is nearly all of the cost) and compiles them in name order, so that
// what it accepts, and the error it reports first, do not depend on the
// schedule.
func compileDefaultKnowledge() (*Knowledge, error) {
	names, err := fs.Glob(knowledgeFiles, "knowledge/*.toml")
	if err != nil {
		return nil, fmt.Errorf("failed to list knowledge: %w", err)
	}
	type decoded struct {
		tf   tableFile
		data []byte
		err  error
	}
	files := make([]decoded, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			d := &files[i]
			if d.data, d.err = knowledgeFiles.ReadFile(n); d.err != nil {
				d.err = fmt.Errorf("failed to read %s: %w", n, d.err)
				return
			}
			d.tf, d.err = decodeTable(n, d.data)
		})
	}
	wg.Wait()
	k := &Knowledge{cmds: map[string]*spec{}}
	for i, n := range names {
		if files[i].err != nil {
			return nil, files[i].err
		}
		if err := k.merge(n, files[i].data, files[i].tf); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// Prints reports that the command argv0 names only prints its operands
// (echo): a [Word.Quoted] operand cannot change what it does.
func (k *Knowledge) Prints(argv0 string) bool {
	name, ok := k.commandName(argv0)
	if !ok {
		return false
	}
	s := k.cmds[name]
	return s != nil && s.Prints
}

// cwdFreeCommand reports that the command name (a table name, or a
// declaration builtin) reads nothing of the working directory by itself:
// what it reads is named by its path operands.
func (k *Knowledge) cwdFreeCommand(name string) bool { return slices.Contains(k.cwdFree, name) }

// Commands lists the command names (and aliases) the table knows, sorted.
func (k *Knowledge) Commands() []string {
	out := make([]string, 0, len(k.cmds))
	for n := range k.cmds {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// add decodes one file into k.
func (k *Knowledge) add(file string, data []byte) error {
	tf, err := decodeTable(file, data)
	if err != nil {
		return err
	}
	return k.merge(file, data, tf)
}

// decodeTable decodes one file, strictly: an unknown key is an error.
func decodeTable(file string, data []byte) (tableFile, error) {
	var tf tableFile
	md, err := toml.Decode(string(data), &tf)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return tf, fmt.Errorf("%s:%d: %w", file, pe.Position.Line, err)
		}
		return tf, fmt.Errorf("%s: %w", file, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		key := und[0]
		return tf, fmt.Errorf("%s:%d: unknown key %q", file, newLocator(data).line(key), key.String())
	}
	return tf, nil
}

// merge compiles one decoded file into k.
func (k *Knowledge) merge(file string, data []byte, tf tableFile) error {
	for _, e := range tf.SafeEnv {
		r, err := compileEnvRule(e)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", file, newLocator(data).line(toml.Key{"safe_env"}), err)
		}
		k.safeEnv = append(k.safeEnv, r)
	}
	k.exportedLowercase = append(k.exportedLowercase, tf.ExportedLowercase...)
	k.safeGitConfig = append(k.safeGitConfig, tf.SafeGitConfig...)
	k.systemDirs = append(k.systemDirs, tf.SystemDirs...)
	if err := k.mergeGitRepo(tf.GitRepo); err != nil {
		return fmt.Errorf("%s:%d: %w", file, newLocator(data).line(toml.Key{"git_repo"}), err)
	}
	k.cwdFree = append(k.cwdFree, tf.CwdFree...)
	names := make([]string, 0, len(tf.Cmd))
	for n := range tf.Cmd {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s := tf.Cmd[n]
		if err := s.compile([]string{n}, nil, tf.FlagGroups); err != nil {
			var ce *compileError
			if errors.As(err, &ce) {
				return fmt.Errorf("%s:%d: %s", file, newLocator(data).line(ce.key), ce.msg)
			}
			return fmt.Errorf("%s: %w", file, err)
		}
		for _, alias := range append([]string{n}, s.Aliases...) {
			if _, dup := k.cmds[alias]; dup {
				return fmt.Errorf("%s:%d: command %q defined twice", file, newLocator(data).line(toml.Key{"cmd", n}), alias)
			}
			k.cmds[alias] = s
		}
	}
	return nil
}

// compileError is a table error at a key, turned into a line by add.
type compileError struct {
	key toml.Key
	msg string
}

func (e *compileError) Error() string { return e.msg }

// compile checks one spec and builds its flag set. key is its TOML key
// path below "cmd".
func (s *spec) compile(names []string, parent *spec, groups map[string][]flagName) error {
	key := append(toml.Key{"cmd", names[0]}, subKey(names[1:])...)
	bad := func(format string, args ...any) error {
		return &compileError{key: key, msg: fmt.Sprintf("%s: %s", strings.Join(names, " "), fmt.Sprintf(format, args...))}
	}
	s.name = strings.Join(names, " ")
	s.parent = parent
	if s.Parser == famUnset {
		if parent != nil {
			s.Parser = parent.Parser
		} else {
			s.Parser = famGNU
		}
	}
	if s.Mutation == lvlUnset && s.Unknown == "" && s.Handler == "" {
		return bad("mutation is required")
	}
	if s.Prints && (s.Parser != famNone || s.Mutation != lvlRead || s.Net != netUnset || s.RunsCode || s.Global ||
		s.Irreversible || s.Privileged || s.Financial != finUnset || s.Handler != "" || s.ReadsEnv || s.Cwd.set ||
		len(s.Sub) > 0 || len(s.Flag) > 0 || s.Wrapper != "" || s.Unknown != "" ||
		slices.ContainsFunc(s.Args, func(sl slot) bool { return sl.kind != slotText })) {
		return bad("prints needs a parser-none, read-only command with text operands only")
	}
	if s.Handler != "" && !slices.Contains(handlerNames[:], s.Handler) {
		return bad("unknown handler %q", s.Handler)
	}
	if err := checkSlots(s.Args); err != nil {
		return bad("%v", err)
	}
	if len(s.Sub) > 0 && len(s.Args) > 0 {
		return bad("a command with subcommands takes no args of its own")
	}
	fs := &flagSet{short: map[byte]*flagDef{}, long: map[string]*flagDef{}}
	addAll := func(fn flagName, eff *effect) error {
		if fn.arg == argTwo && s.Parser != famGNU && s.Parser != famClap && s.Parser != famGit && s.Parser != famPOSIX {
			return bad("two-word flag %q needs a getopt-style parser", fn.text)
		}
		def := &flagDef{canon: fn.names[0], arg: fn.arg, eff: eff}
		for _, n := range fn.names {
			if err := fs.add(s.Parser, n, def); err != nil {
				return bad("%v", err)
			}
		}
		return nil
	}
	for _, fn := range s.Flags {
		if err := addAll(fn, nil); err != nil {
			return err
		}
	}
	flagKeys := make([]string, 0, len(s.Flag))
	for n := range s.Flag {
		flagKeys = append(flagKeys, n)
	}
	slices.Sort(flagKeys)
	for _, n := range flagKeys {
		var fn flagName
		if err := fn.UnmarshalText([]byte(n)); err != nil {
			return &compileError{key: append(slices.Clone(key), "flag", n), msg: err.Error()}
		}
		eff := s.Flag[n]
		if err := checkSlots(eff.Args); err != nil {
			return &compileError{key: append(slices.Clone(key), "flag", n), msg: err.Error()}
		}
		eff.hasArgs = eff.Args != nil
		if eff.Check != "" && !slices.Contains(checkNames[:], eff.Check) {
			return &compileError{key: append(slices.Clone(key), "flag", n), msg: fmt.Sprintf("unknown check %q", eff.Check)}
		}
		pattern := strings.HasSuffix(n, "*")
		if (eff.Path.set || eff.AtPath.set || eff.Dir || eff.Into || eff.Check != "") && fn.arg == argNone && !pattern {
			return &compileError{key: append(slices.Clone(key), "flag", n), msg: "path, at_path, dir and check need a flag that takes an argument"}
		}
		if err := addAll(fn, eff); err != nil {
			return err
		}
	}
	for _, g := range s.Groups {
		list, ok := groups[g]
		if !ok {
			return bad("unknown flag group %q", g)
		}
		for _, fn := range list {
			def := &flagDef{canon: fn.names[0], arg: fn.arg}
			for _, n := range fn.names {
				if fs.lookupExact(n) == nil && !fs.hasPattern(n) {
					if err := fs.add(s.Parser, n, def); err != nil {
						return bad("group %s: %v", g, err)
					}
				}
			}
		}
	}
	// Persistent flags of the ancestors stay valid below them.
	for p := parent; p != nil; p = p.parent {
		if !p.Persistent {
			continue
		}
		p.flags.each(func(n string, def *flagDef) {
			if fs.lookupExact(n) == nil {
				_ = fs.add(s.Parser, n, def)
			}
		})
	}
	slices.Sort(fs.longs)
	s.flags = fs
	for _, want := range s.SafeWith {
		for _, n := range strings.Split(want, "|") {
			if def := fs.lookupExact(n); def == nil || def.eff != nil || def.canon != n {
				return bad("safe_with %q must name harmless flags by their first names", want)
			}
		}
	}
	subs := make([]string, 0, len(s.Sub))
	for n := range s.Sub {
		subs = append(subs, n)
	}
	slices.Sort(subs)
	for _, n := range subs {
		if err := s.Sub[n].compile(append(slices.Clone(names), n), s, groups); err != nil {
			return err
		}
		for _, a := range s.Sub[n].Aliases {
			if _, dup := s.Sub[a]; dup {
				return bad("subcommand %q defined twice", a)
			}
		}
	}
	for _, n := range subs {
		for _, a := range s.Sub[n].Aliases {
			s.Sub[a] = s.Sub[n]
		}
	}
	if s.DefaultSub != "" && s.Sub[s.DefaultSub] == nil {
		return bad("default_sub %q is not a subcommand", s.DefaultSub)
	}
	return nil
}

func subKey(names []string) toml.Key {
	var k toml.Key
	for _, n := range names {
		k = append(k, "sub", n)
	}
	return k
}

// checkSlots enforces the shapes the matcher supports: at most one
// unbounded slot, optional slots only without one, and a rest-taking slot
// last with only single slots before it.
func checkSlots(slots []slot) error {
	unbounded, optional := 0, 0
	for i, sl := range slots {
		if sl.max < 0 {
			unbounded++
		}
		if sl.min == 0 && sl.max == 1 {
			optional++
		}
		if sl.takesRest() || sl.kind == slotCmd {
			if i != len(slots)-1 {
				return fmt.Errorf("slot %q must be last", sl.text)
			}
			for _, prev := range slots[:i] {
				if prev.min != 1 || prev.max != 1 {
					return fmt.Errorf("slot %q must follow single slots only", sl.text)
				}
			}
		}
	}
	if unbounded > 1 {
		return errors.New("at most one slot may repeat")
	}
	if unbounded == 1 && optional > 0 && !(len(slots) > 0 && slots[len(slots)-1].kind == slotCmd) {
		return errors.New("optional slots cannot mix with a repeating slot")
	}
	return nil
}

// add registers one flag name.
func (fs *flagSet) add(fam family, n string, def *flagDef) error {
	switch {
	case n == "-#":
		if fs.digits != nil {
			return fmt.Errorf("flag %q defined twice", n)
		}
		fs.digits = def
		return nil
	case strings.HasSuffix(n, "*"):
		if fam != famSingle && fam != famGo {
			return fmt.Errorf("flag pattern %q needs the single or go parser", n)
		}
		fs.prefix = append(fs.prefix, prefixDef{prefix: strings.TrimSuffix(n, "*"), def: def})
		return nil
	}
	switch fam {
	case famGNU, famGit, famClap, famPOSIX:
		if len(n) == 2 && n[0] == '-' {
			if fs.short[n[1]] != nil {
				return fmt.Errorf("flag %q defined twice", n)
			}
			fs.short[n[1]] = def
			return nil
		}
		if fam == famPOSIX || !strings.HasPrefix(n, "--") {
			return fmt.Errorf("flag %q does not fit the %s parser", n, familyNames[fam])
		}
	case famGo:
		n = "-" + strings.TrimLeft(n, "-")
	case famNone:
		return fmt.Errorf("the none parser takes no flags (%q)", n)
	}
	if fs.long[n] != nil {
		return fmt.Errorf("flag %q defined twice", n)
	}
	fs.long[n] = def
	fs.longs = append(fs.longs, n)
	return nil
}

// hasPattern reports a -# or trailing-* name already registered.
func (fs *flagSet) hasPattern(n string) bool {
	if n == "-#" {
		return fs.digits != nil
	}
	for _, p := range fs.prefix {
		if p.prefix+"*" == n {
			return true
		}
	}
	return false
}

func (fs *flagSet) lookupExact(n string) *flagDef {
	if len(n) == 2 && n[0] == '-' {
		if d := fs.short[n[1]]; d != nil {
			return d
		}
	}
	return fs.long[n]
}

// each calls f for every named flag (not patterns).
func (fs *flagSet) each(f func(string, *flagDef)) {
	for c, d := range fs.short {
		f("-"+string(c), d)
	}
	for n, d := range fs.long {
		f(n, d)
	}
}

// locator maps TOML key paths to the line that defines them. toml's
// MetaData has no public positions for keys, so this reads the headers and
// key lines itself; it only serves error messages.
type locator struct {
	lines map[string]int
}

func newLocator(data []byte) *locator {
	l := &locator{lines: map[string]int{}}
	var table []string
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' {
			continue
		}
		if t[0] == '[' {
			h := strings.Trim(strings.TrimPrefix(strings.TrimPrefix(t, "[["), "["), " ")
			keys, rest := splitKey(h)
			if keys != nil && strings.HasPrefix(strings.TrimSpace(rest), "]") {
				table = keys
				l.note(table, i+1)
			}
			continue
		}
		keys, rest := splitKey(t)
		if keys != nil && strings.HasPrefix(strings.TrimSpace(rest), "=") {
			l.note(append(slices.Clone(table), keys...), i+1)
		}
	}
	return l
}

func (l *locator) note(k []string, line int) {
	s := strings.Join(k, "\x00")
	if _, ok := l.lines[s]; !ok {
		l.lines[s] = line
	}
}

// line finds the key or its nearest ancestor; 0 when unknown.
func (l *locator) line(k toml.Key) int {
	for n := len(k); n > 0; n-- {
		if line, ok := l.lines[strings.Join(k[:n], "\x00")]; ok {
			return line
		}
	}
	return 0
}

// splitKey reads a dotted TOML key from the start of s.
func splitKey(s string) ([]string, string) {
	var keys []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, ""
		}
		switch s[0] {
		case '"', '\'':
			end := strings.IndexByte(s[1:], s[0])
			if end < 0 {
				return nil, ""
			}
			keys = append(keys, s[1:1+end])
			s = s[end+2:]
		default:
			end := 0
			for end < len(s) && (isBareKeyByte(s[end])) {
				end++
			}
			if end == 0 {
				return nil, ""
			}
			keys = append(keys, s[:end])
			s = s[end:]
		}
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return keys, s
		}
		s = s[1:]
	}
}

func isBareKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// commandName maps argv[0] to a table name: a bare name, or a path in one
// of the system directories. Anything else is a file the caller runs.
func (k *Knowledge) commandName(argv0 string) (string, bool) {
	if !strings.Contains(argv0, "/") {
		return argv0, true
	}
	dir, base := path.Split(argv0)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "/"
	}
	if slices.Contains(k.systemDirs, dir) && base != "" {
		return base, true
	}
	return "", false
}
