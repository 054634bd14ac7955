package parse

import (
	"fmt"
	"strconv"
)

// Pos is a position in the parsed source, 1-based.
type Pos struct {
	Line, Col int
}

func (p Pos) String() string { return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col) }

// Error is a shell text narrowd could not parse. A parse error keeps the
// call at its ceiling.
type Error struct {
	Pos  Pos
	Text string
	// Budget reports text narrowd did not analyse because it exceeds
	// the analysis budget (errors.Is(err, ErrBudget)), not a syntax
	// error.
	Budget bool
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Pos, e.Text) }

// Word is one shell word after quote removal.
type Word struct {
	// Value is the word's exact runtime value when Literal is true, and a
	// best-effort rendering otherwise (never to be trusted).
	Value string
	// Literal reports that Value is exactly what the program will receive:
	// no parameter expansion, command substitution, glob, brace or tilde
	// expansion, arithmetic or anything else that is only known at run
	// time.
	Literal bool
	// Why names the construct that made the word dynamic, such as
	// "parameter expansion" or "glob"; empty when Literal.
	Why string
	// Glob reports a pathname pattern narrowd can reason about (Literal
	// is false and Value is the pattern): bash replaces it with the
	// files it matches, or leaves it as is, and every result begins
	// with the pattern's literal prefix, is no option and stays under
	// its literal directory. The proofs decide whether that directory
	// is inside the workspace.
	Glob bool
	// GlobOption reports a Glob that starts with a metacharacter: an
	// expansion may start with '-' and be read as an option.
	GlobOption bool
	// Quoted reports a dynamic word (Literal false) whose every run-time
	// part stands inside double quotes and is either a command
	// substitution, whose commands are analyzed as programs of their
	// own, or a plain parameter expansion ($x or ${x}, no operator) of a
	// name whose value comes from nothing outside the text: one the text
	// itself binds (a while-read loop's names, a for loop's variable)
	// or one the shell sets itself ($PWD, $?, $#, $$, $!, $-). bash
	// passes it on as exactly one argument: no word splitting, no
	// pathname, brace or tilde expansion, and no environment variable
	// is read. Its value is still unknown (Value renders the source),
	// so only a command that does nothing with an operand but print it
	// ([Knowledge.Prints]: echo) may take one in a proven analysis.
	Quoted bool
	Pos    Pos
}

// Access is what a program does to one path argument, least risky first.
type Access uint8

// Accesses.
const (
	// Read only reads the path (or lists it).
	Read Access = iota
	// Create makes a new file or directory and fails or leaves the target
	// unchanged if it exists (mkdir, touch on a new path, cp -n).
	Create
	// Update changes existing state that survives: mv, chmod, touch
	// times, append (>>).
	Update
	// Overwrite replaces content in place: > redirects, cp onto a file,
	// sed -i, tee. The target survives with a new value (spec §4.4: not
	// pure deletion).
	Overwrite
	// Delete removes the target and puts nothing in its place.
	Delete
	// Exec runs the file as code (source, bash script.sh, ./run).
	Exec
)

var accessNames = [...]string{"read", "create", "update", "overwrite", "delete", "exec"}

func (a Access) String() string {
	if int(a) < len(accessNames) {
		return accessNames[a]
	}
	return fmt.Sprintf("access(%d)", uint8(a))
}

// PathArg is one path a program touches, from an argument or a redirect.
type PathArg struct {
	Word   Word
	Access Access
	// Recursive reports that the access reaches everything under the path
	// (rm -r, cp -r, chmod -R, grep -r, find).
	Recursive bool
	// Follows reports a recursive access that follows symbolic links
	// inside the tree (grep -R, rg -L, du -L, zip -r, diff -r): what it
	// reaches is known only by walking the tree.
	Follows bool
}

// Net is how far a program can reach over the network.
type Net uint8

// Network reach, least risky first.
const (
	NoNet Net = iota
	// LocalNet reaches only loopback or the local machine's daemons.
	LocalNet
	// Internet reaches any host: curl, wget, git fetch/push, npm install.
	Internet
)

// Program is one program that would run, after wrappers (sudo, env, xargs,
// sh -c, find -exec, …) are unwrapped, with what the command knowledge
// table says it does.
type Program struct {
	// Name is the program name as invoked (argv[0] after wrappers).
	Name string
	Argv []Word
	Pos  Pos
	// Known reports that the table knows this exact form: the command,
	// its subcommand and every flag given. When false, Why says what was
	// not known, and the call keeps its ceiling.
	Known bool
	Why   string
	// Rule names the table entry that classified it, for evidence
	// ("ls", "git status", "sed -i").
	Rule string
	// Mutation is the worst thing it does to state: "read", "create",
	// "update" or "delete" (spec §3.1 values).
	Mutation string
	// Paths are the path arguments and redirect targets with their access.
	Paths []PathArg
	// Net is how far it can reach.
	Net Net
	// RunsCode reports that it executes code it did not write: build and
	// test runners execute the repository, interpreters run scripts.
	RunsCode bool
	// Global reports state outside any path argument: git config
	// --global, npm install -g, systemctl, docker, kubectl. Such state is
	// account-wide (spec §3.2 configuration rule).
	Global bool
	// Financial is "none", "indirect" or "direct" (spec §3.5).
	Financial string
	// Irreversible reports an effect nothing restores beyond overwrite or
	// delete of named paths: publishing (npm publish, git push --force).
	Irreversible bool
	// Wrappers lists the wrappers that were unwrapped to reach this
	// program, outermost first ("sudo", "env", "xargs", "sh -c").
	Wrappers []string
	// Privileged reports sudo, doas or similar on the way.
	Privileged bool
	// Dirs are the working directories the program may run in, relative
	// to the one the text starts in ("." is that one) or absolute; nil
	// means only the start directory. DirUnknown reports that an
	// earlier cd left it unknown. Programs that read the state of the
	// directory they run in (git finds its repository from it) need it.
	Dirs       []string
	DirUnknown bool
	// Git, for a known git form, is what that form may meet in the
	// repository it runs in; the proofs read the repository and keep
	// the ceiling unless it is proven ordinary.
	Git *GitRepo
}

// Unproven is a construct whose runtime effect narrowd cannot prove: it
// keeps the call at its ceiling.
type Unproven struct {
	Pos Pos
	// Why is a short stable phrase: "parameter expansion", "glob",
	// "eval", "unknown command", "unknown flag --foo", ….
	Why string
}

// Analysis is everything narrowd knows about one shell command text.
type Analysis struct {
	// Err is set when the text does not parse; then nothing else counts.
	Err error
	// Programs is every program the text would run, in source order,
	// including those inside pipelines, lists, subshells, substitutions,
	// functions, loops and wrappers.
	Programs []Program
	// Unproven lists every construct that keeps the ceiling. An analysis
	// narrows only when Err is nil and Unproven is empty.
	Unproven []Unproven
}

// Proven reports whether the analysis may narrow at all.
func (a *Analysis) Proven() bool {
	if a.Err != nil || len(a.Unproven) > 0 {
		return false
	}
	for _, p := range a.Programs {
		if !p.Known {
			return false
		}
	}
	return true
}
