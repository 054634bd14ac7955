package parse

import (
	"fmt"
	"strings"
)

// This file holds the vocabulary of the knowledge table: the TOML shapes and
// the small text forms inside them (flag names, operand slots, enums). Each
// text form decodes through UnmarshalText so that BurntSushi/toml reports a
// bad value with the line of its key.

// spec is one command or subcommand of the table.
type spec struct {
	// Handler names Go code that finishes what the data cannot say (find's
	// expression language, sed and awk programs, shells, tar's modes).
	Handler string `toml:"handler"`
	// Parser is the option parser family the real tool uses.
	Parser family `toml:"parser"`
	// Permute overrides the family's default: whether options may follow
	// operands.
	Permute *bool `toml:"permute"`
	// Abbrev overrides the family's default: whether unambiguous prefixes
	// of long options are accepted. Prefix matching is only sound when the
	// flag list is complete, so tables for tools that abbreviate list even
	// the options that make the call unprovable.
	Abbrev *bool `toml:"abbrev"`

	Mutation     level     `toml:"mutation"`
	Net          netReach  `toml:"net"`
	RunsCode     bool      `toml:"runs_code"`
	Global       bool      `toml:"global"`
	Financial    financial `toml:"financial"`
	Irreversible bool      `toml:"irreversible"`
	Privileged   bool      `toml:"privileged"`
	// SafeWith lists options that, all given together, remove the
	// command's own runs_code: git diff --cached --no-ext-diff
	// --no-textconv cannot reach a driver or the worktree. Each entry is
	// a flag name with | alternatives. Flags that run code themselves
	// keep doing so.
	SafeWith []string `toml:"safe_with"`
	// Recursive marks every path operand recursive.
	Recursive bool `toml:"recursive"`
	// Follows marks a tool whose recursion follows symbolic links by
	// default (zip -r, diff -r); a flag's no_follow turns it off.
	Follows bool `toml:"follows"`
	// Cwd is the access to the working directory (or the directory a -C
	// style flag names) that the program has without naming it: git
	// commit updates the repository, wget creates a file in it.
	Cwd optAccess `toml:"cwd"`
	// Args are the operand slots, in order.
	Args []slot `toml:"args"`
	// Flags are the options that change nothing this table tracks.
	Flags []flagName `toml:"flags"`
	// Groups name shared flag lists (flag_groups in the same file) that
	// this command also accepts, as harmless flags; its own flags win.
	Groups []string `toml:"groups"`
	// Flag are the options that change the effect, keyed by flag name.
	Flag map[string]*effect `toml:"flag"`
	// Sub are the subcommands; when set, the first operand must name one.
	Sub map[string]*spec `toml:"sub"`
	// DefaultSub is the subcommand that runs when the words start with a
	// flag or are absent (git stash is git stash push).
	DefaultSub string `toml:"default_sub"`
	// Persistent makes this command's flags valid after its subcommands
	// too (cobra's persistent flags: kubectl -n, docker --context).
	Persistent bool `toml:"persistent"`
	// Unknown makes the form unprovable, with this reason; the operands
	// are still read so that wrappers report what they run.
	Unknown string `toml:"unknown"`
	// Empty is the reason the form is unprovable when it has no operands
	// (python with no script reads its program from stdin).
	Empty string `toml:"empty"`
	// Wrapper names the wrapper for Classification.Wrapper when a cmd or
	// script slot is filled; the command name when empty.
	Wrapper string `toml:"wrapper"`
	// Aliases are other names for the same entry (egrep for grep -E is
	// not an alias; vdir for ls is).
	Aliases []string `toml:"aliases"`
	// ReadsEnv reports that the form prints the process environment
	// (env, printenv), which holds secrets: it is reported as a read of
	// /proc/self/environ so that path proofs see it. A wrapper that runs a
	// command does not print it.
	ReadsEnv bool `toml:"reads_env"`
	// ResponseFiles marks tools that read more arguments from @file
	// (gcc, rustc): such a word is unknown.
	ResponseFiles bool `toml:"response_files"`
	// EnvAssign lets NAME=VALUE operands precede the command slot (env,
	// sudo); each name must be in the safe_env list.
	EnvAssign bool `toml:"env_assign"`
	// Prints marks a command that does nothing with its operands but
	// print them (echo): what an operand's value is cannot change what
	// it does, so a double-quoted dynamic word ([Word.Quoted]) is one
	// operand it may take in a proven analysis. Only a parser-none,
	// read-only command with text operands and no other effect may set
	// it.
	Prints bool `toml:"prints"`

	// Filled by compile.
	name   string   // full rule name, "git log"
	flags  *flagSet // this level's options (plus persistent ones)
	parent *spec
}

// effect is what one flag changes. Effects only add risk, except Args,
// which replaces the operand slots (grep -e moves the pattern into the
// flag).
type effect struct {
	Mutation     level     `toml:"mutation"`
	Net          netReach  `toml:"net"`
	RunsCode     bool      `toml:"runs_code"`
	Global       bool      `toml:"global"`
	Financial    financial `toml:"financial"`
	Irreversible bool      `toml:"irreversible"`
	Privileged   bool      `toml:"privileged"`
	Recursive    bool      `toml:"recursive"`
	// Follows makes the recursion follow symbolic links (grep -R, rg
	// -L, du -L); NoFollow stops a tool that follows by default (zip
	// -y, diff --no-dereference).
	Follows  bool `toml:"follows"`
	NoFollow bool `toml:"no_follow"`
	// Path is the access to the flag's argument, which is a path.
	Path optAccess `toml:"path"`
	// AtPath is the access to the flag's argument when it starts with @
	// (curl -d @file reads file).
	AtPath optAccess `toml:"at_path"`
	// Dir makes the flag's argument the directory that relative path
	// operands and Cwd resolve against (git -C, make -C, tar -C).
	Dir bool `toml:"dir"`
	// Into makes the flag's argument the directory the command's Cwd
	// access lands in, without re-anchoring operands (unzip -d, 7z -o).
	Into bool `toml:"into"`
	// Args replaces the operand slots.
	Args []slot `toml:"args"`
	// HasArgs tells an explicit empty Args from an absent one; set by
	// compile.
	hasArgs bool
	// Retarget raises the access of every path operand to at least this.
	Retarget optAccess `toml:"retarget"`
	// Cwd raises the access to the working directory.
	Cwd optAccess `toml:"cwd"`
	// ReadMode selects a listing or checking mode (crontab -l, black
	// --check): the command's own mutation, global, irreversible,
	// financial and cwd effects do not apply; other flags' still do.
	ReadMode bool `toml:"read_mode"`
	// NoCwd drops the command's Cwd access: a listing mode of an
	// extractor (unzip -l) touches nothing there.
	NoCwd bool `toml:"no_cwd"`
	// Unknown makes the call unprovable with this reason.
	Unknown string `toml:"unknown"`
	// Stop ends option parsing: every later word is an operand (go test
	// -args).
	Stop bool `toml:"stop"`
	// Final marks --help and --version: alone, they print and exit.
	Final bool `toml:"final"`
	// Check names a validator for the flag's value ("git-config",
	// "env-name").
	Check string `toml:"check"`
}

// level is a mutation value; zero means unset.
type level uint8

const (
	lvlUnset level = iota
	lvlRead
	lvlCreate
	lvlUpdate
	lvlDelete
)

var levelNames = [...]string{"", "read", "create", "update", "delete"}

func (l level) String() string { return levelNames[l] }

func (l *level) UnmarshalText(b []byte) error {
	for i, n := range levelNames[1:] {
		if string(b) == n {
			*l = level(i + 1)
			return nil
		}
	}
	return fmt.Errorf("unknown mutation %q (want read, create, update or delete)", b)
}

// netReach is a Net value; zero means unset.
type netReach uint8

const (
	netUnset netReach = iota
	netNone
	netLocal
	netInternet
)

func (n *netReach) UnmarshalText(b []byte) error {
	switch string(b) {
	case "none":
		*n = netNone
	case "local":
		*n = netLocal
	case "internet":
		*n = netInternet
	default:
		return fmt.Errorf("unknown net %q (want none, local or internet)", b)
	}
	return nil
}

func (n netReach) net() Net {
	switch n {
	case netLocal:
		return LocalNet
	case netInternet:
		return Internet
	}
	return NoNet
}

// financial is a financial value; zero means unset.
type financial uint8

const (
	finUnset financial = iota
	finNone
	finIndirect
	finDirect
)

var financialNames = [...]string{"", "none", "indirect", "direct"}

func (f *financial) UnmarshalText(b []byte) error {
	for i, n := range financialNames[1:] {
		if string(b) == n {
			*f = financial(i + 1)
			return nil
		}
	}
	return fmt.Errorf("unknown financial %q (want none, indirect or direct)", b)
}

// optAccess is an Access that may be absent.
type optAccess struct {
	set bool
	a   Access
}

func (o *optAccess) UnmarshalText(b []byte) error {
	a, ok := accessByName(string(b))
	if !ok {
		return fmt.Errorf("unknown access %q (want read, create, update, overwrite, delete or exec)", b)
	}
	*o = optAccess{set: true, a: a}
	return nil
}

func accessByName(s string) (Access, bool) {
	for i, n := range accessNames {
		if s == n {
			return Access(i), true
		}
	}
	return 0, false
}

// family is an option parser family.
type family uint8

const (
	famUnset family = iota
	// famGNU is getopt_long: combined short flags, attached short
	// arguments, --long=value or --long value, unambiguous abbreviations,
	// -- ends options, permutation.
	famGNU
	// famPOSIX is getopt with short options only. glibc's getopt
	// permutes, so options after operands still count (zip out.zip a -m
	// deletes); treating them as options is also the safe reading.
	famPOSIX
	// famGit is git's parse-options: like GNU, plus --no- negation.
	famGit
	// famGo is Go's flag package: -flag or --flag, -flag=value or -flag
	// value, no combining, stops at the first operand.
	famGo
	// famSingle is whole-word options with one dash (gcc, openssl, ip):
	// no combining; -name=value, -name value, -Ipath; trailing-*
	// patterns; options may follow operands.
	famSingle
	// famClap is clap and similar Rust or Node parsers: like GNU without
	// abbreviations.
	famClap
	// famNone takes no options: every word is an operand (echo, test).
	famNone
)

var familyNames = [...]string{"", "gnu", "posix", "git", "go", "single", "clap", "none"}

func (f *family) UnmarshalText(b []byte) error {
	for i, n := range familyNames[1:] {
		if string(b) == n {
			*f = family(i + 1)
			return nil
		}
	}
	return fmt.Errorf("unknown parser %q (want gnu, posix, git, go, single, clap or none)", b)
}

// permutes reports the family's default for options after operands.
func (f family) permutes() bool {
	// Reading a later word as an option is the safe mistake: missing an
	// option after an operand (gcc a.c -o out) would hide its effect.
	return f != famGo && f != famNone
}

// abbreviates reports the family's default for long-option prefixes.
func (f family) abbreviates() bool { return f == famGNU || f == famGit }

// argMode says whether a flag takes an argument.
type argMode uint8

const (
	argNone argMode = iota
	argRequired
	// argOptional takes a value only when attached (--color=auto, -i.bak).
	argOptional
	// argTwo takes the next two words (jq --arg NAME VALUE); the value of
	// the hit is the second.
	argTwo
)

// flagName is the text form of one option and its aliases:
// "-r|-R|--recursive", "-n|--lines=" (takes an argument), "--color=?"
// (optional attached argument), "--arg=2" (two separate words), "-W*"
// (any option starting with -W, for
// the single family), "-#" (any all-digit short option: head -5).
type flagName struct {
	text  string
	names []string
	arg   argMode
}

func (f *flagName) UnmarshalText(b []byte) error {
	s := string(b)
	f.text = s
	switch {
	case strings.HasSuffix(s, "=2"):
		f.arg = argTwo
		s = strings.TrimSuffix(s, "=2")
	case strings.HasSuffix(s, "=?"):
		f.arg = argOptional
		s = strings.TrimSuffix(s, "=?")
	case strings.HasSuffix(s, "="):
		f.arg = argRequired
		s = strings.TrimSuffix(s, "=")
	}
	f.names = strings.Split(s, "|")
	for _, n := range f.names {
		if len(n) < 2 || (n[0] != '-' && n[0] != '+') || n == "--" {
			return fmt.Errorf("bad flag name %q in %q", n, b)
		}
		if strings.ContainsAny(n, "= \t") {
			return fmt.Errorf("bad flag name %q in %q", n, b)
		}
	}
	return nil
}

// slotKind is what an operand is.
type slotKind uint8

const (
	// slotText is not a path: a pattern, a name, a number.
	slotText slotKind = iota
	// slotPath is a local path with an access.
	slotPath
	// slotURL is a URL; file: URLs are read paths.
	slotURL
	// slotRemote is host:path (remote, reached over the network) or a
	// local path with the slot's access.
	slotRemote
	// slotCmd is the rest of the words: a command the wrapper runs.
	slotCmd
	// slotScript is shell text; with a * or + it is the rest of the words
	// joined by spaces (eval, watch).
	slotScript
	// slotState names state that is not a local path (a branch, a
	// package, a container, a process) and is changed with the slot's
	// access: its presence raises the mutation.
	slotState
)

// slot is the text form of one operand position: "read", "overwrite",
// "text?", "read*", "delete+", "url+", "remote-read+", "cmd", "script*".
type slot struct {
	text     string
	kind     slotKind
	access   Access
	min, max int // max < 0: unbounded
}

func (s *slot) UnmarshalText(b []byte) error {
	t := string(b)
	s.text = t
	s.min, s.max = 1, 1
	switch {
	case strings.HasSuffix(t, "?"):
		s.min, s.max = 0, 1
	case strings.HasSuffix(t, "*"):
		s.min, s.max = 0, -1
	case strings.HasSuffix(t, "+"):
		s.min, s.max = 1, -1
	}
	t = strings.TrimRight(t, "?*+")
	switch {
	case t == "text":
		s.kind = slotText
	case t == "url":
		s.kind = slotURL
	case t == "cmd":
		s.kind = slotCmd
		if s.max < 0 {
			return fmt.Errorf("slot %q: cmd takes the rest already; use cmd or cmd?", b)
		}
	case t == "script":
		s.kind = slotScript
	case strings.HasPrefix(t, "state-"):
		a, ok := accessByName(strings.TrimPrefix(t, "state-"))
		if !ok || a == Exec {
			return fmt.Errorf("unknown slot %q", b)
		}
		s.kind, s.access = slotState, a
	case strings.HasPrefix(t, "remote-"):
		a, ok := accessByName(strings.TrimPrefix(t, "remote-"))
		if !ok || a == Exec {
			return fmt.Errorf("unknown slot %q", b)
		}
		s.kind, s.access = slotRemote, a
	default:
		a, ok := accessByName(t)
		if !ok {
			return fmt.Errorf("unknown slot %q (want text, url, cmd, script, remote-ACCESS or an access)", b)
		}
		s.kind, s.access = slotPath, a
	}
	return nil
}

// severity orders slots by the worst they can do, for choosing among
// flags that each replace the operand slots (git branch -r -d).
func (s slot) severity() int {
	switch s.kind {
	case slotCmd, slotScript:
		return 10
	case slotPath, slotRemote, slotState:
		return 1 + int(s.access)
	}
	return 0
}

// takesRest reports whether the slot swallows every remaining word and so
// ends option parsing.
func (s slot) takesRest() bool {
	return s.kind == slotCmd || (s.kind == slotScript && s.max < 0)
}

// flagDef is one compiled option.
type flagDef struct {
	canon string // first name, for rules and reasons
	arg   argMode
	eff   *effect // nil: harmless
}

// flagSet is one command level's options, compiled for lookup.
type flagSet struct {
	short  map[byte]*flagDef
	long   map[string]*flagDef // "--name" or, for go and single, "-name"
	prefix []prefixDef         // "-W*"
	digits *flagDef            // "-#"
	longs  []string            // long names, for abbreviation
}

type prefixDef struct {
	prefix string
	def    *flagDef
}
