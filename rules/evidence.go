package rules

import (
	"slices"
	"strconv"
	"strings"
)

// EvidenceKind names what a piece of evidence claims. The set is closed:
// every kind narrowd emits is a constant below, each listed once in
// [EvidenceKinds], and a profile that names any other kind in
// has_evidence, proven or a comparison with an evidence's kind fails to
// load, since no call could ever carry it (a typo in a negated condition
// would silently widen a grant).
//
// To add a kind: declare its constant below with a one-line doc, add it
// to evidenceKinds in sorted order, and run go test ./rules -u, which
// writes its row into the table of evidence kinds in
// profiles/PROFILES.md. A test fails when a constant is missing from the
// list or the table, when its doc is missing, or when an emitter anywhere
// in the module spells a kind as a string literal instead of using the
// constant.
type EvidenceKind string

// The evidence kinds narrowd emits.
const (
	// KindAgentPermissionMode records the agent's own permission mode; it relaxes nothing.
	KindAgentPermissionMode EvidenceKind = "agent-permission-mode"
	// KindAgentSandbox records one of the agent's own sandbox settings; it relaxes nothing.
	KindAgentSandbox EvidenceKind = "agent-sandbox"
	// KindBesideCode marks a part of a call that would be asked about on its own, next to code the call runs.
	KindBesideCode EvidenceKind = "beside-code"
	// KindBoundedPaths proves every path of a patch, so its argument no longer reaches the account.
	KindBoundedPaths EvidenceKind = "bounded-paths"
	// KindBoundedRoot proves a search root, so the argument no longer reaches the account.
	KindBoundedRoot EvidenceKind = "bounded-root"
	// KindFactBound proves one fact false because every part of the call is proven.
	KindFactBound EvidenceKind = "fact-bound"
	// KindGitConfigRunsCode finds repository git configuration that can run code; it holds a label at its ceiling.
	KindGitConfigRunsCode EvidenceKind = "git-config-runs-code"
	// KindGlobInside proves every expansion of a glob stays inside the workspace and is no option.
	KindGlobInside EvidenceKind = "glob-inside"
	// KindGlobTooMany finds a glob matching more paths than narrowd checks; it raises scope.
	KindGlobTooMany EvidenceKind = "glob-too-many"
	// KindGlobUnreadable finds a glob narrowd could not expand; it raises scope.
	KindGlobUnreadable EvidenceKind = "glob-unreadable"
	// KindHarmlessDevice proves a path is a standard stream or the null device.
	KindHarmlessDevice EvidenceKind = "harmless-device"
	// KindKnownCommand proves a program's form is in the command knowledge table.
	KindKnownCommand EvidenceKind = "known-command"
	// KindLabelBound proves an upper bound on one label from the riskiest part of the call.
	KindLabelBound EvidenceKind = "label-bound"
	// KindLinkEscape finds a symbolic link that leaves the workspace; it raises scope.
	KindLinkEscape EvidenceKind = "link-escape"
	// KindMissingArgument finds an argument the tool needs missing or of the wrong type.
	KindMissingArgument EvidenceKind = "missing-argument"
	// KindNetworkRedirect finds a redirect to /dev/tcp or /dev/udp, through which bash connects.
	KindNetworkRedirect EvidenceKind = "network-redirect"
	// KindNoNarrowing records that narrowd reads nothing from the tool's arguments.
	KindNoNarrowing EvidenceKind = "no-narrowing"
	// KindNoNetwork proves from the table that a program opens no network connection.
	KindNoNetwork EvidenceKind = "no-network"
	// KindNoProgram proves the shell text runs no program.
	KindNoProgram EvidenceKind = "no-program"
	// KindOneTarget proves the call acts on the one thing a proven path names.
	KindOneTarget EvidenceKind = "one-target"
	// KindOverBudget records a call narrowd did not analyse whole, or whose evidence it cut, over its budget; the call keeps its ceiling.
	KindOverBudget EvidenceKind = "over-budget"
	// KindParseError records shell text narrowd could not parse.
	KindParseError EvidenceKind = "parse-error"
	// KindPatchAddsOnly proves a patch only adds files.
	KindPatchAddsOnly EvidenceKind = "patch-adds-only"
	// KindPatchFiles proves how many files a patch adds, updates and deletes, all inside the workspace.
	KindPatchFiles EvidenceKind = "patch-files"
	// KindPatchNoDelete proves a patch deletes no file.
	KindPatchNoDelete EvidenceKind = "patch-no-delete"
	// KindPatchUnreadable records a patch narrowd could not read.
	KindPatchUnreadable EvidenceKind = "patch-unreadable"
	// KindPathInside proves a path stays inside a workspace root.
	KindPathInside EvidenceKind = "path-inside"
	// KindPathNotAbsolute records an MCP path argument that is not absolute, which the server resolves itself.
	KindPathNotAbsolute EvidenceKind = "path-not-absolute"
	// KindPathOutside finds a path outside every workspace root, or one narrowd cannot resolve.
	KindPathOutside EvidenceKind = "path-outside"
	// KindPatternEscapes finds a search pattern that is absolute or climbs with "..".
	KindPatternEscapes EvidenceKind = "pattern-escapes"
	// KindPrivileged finds a program run with raised privileges (sudo, doas).
	KindPrivileged EvidenceKind = "privileged"
	// KindRunsCode finds a program that executes code narrowd did not read (a build, test or script runner).
	KindRunsCode EvidenceKind = "runs-code"
	// KindSandboxExec is established by narrowd's sandbox: what the confined run can reach.
	KindSandboxExec EvidenceKind = "sandbox-exec"
	// KindSandboxTicket proves the command is narrowd exec redeeming a live ticket this daemon issued.
	KindSandboxTicket EvidenceKind = "sandbox-ticket"
	// KindSearchInside proves every search root is inside the workspace.
	KindSearchInside EvidenceKind = "search-inside"
	// KindSensitiveName guesses a path names a secret (it matches a sensitive pattern); it raises scope.
	KindSensitiveName EvidenceKind = "sensitive-name"
	// KindSensitiveWord guesses an argument names secrets (token, password, key); it raises scope.
	KindSensitiveWord EvidenceKind = "sensitive-word"
	// KindSnapshot is established by the daemon: it holds a copy of the files the call changes.
	KindSnapshot EvidenceKind = "snapshot"
	// KindUnknownCommand finds a program or form the command knowledge table does not know.
	KindUnknownCommand EvidenceKind = "unknown-command"
	// KindUnlabelled records that the catalog has no labels for the tool.
	KindUnlabelled EvidenceKind = "unlabelled"
	// KindUnproven finds a shell construct whose effect is only known at run time.
	KindUnproven EvidenceKind = "unproven"
	// KindURL records a URL the call requests; a URL is a way out (spec §3.4).
	KindURL EvidenceKind = "url"
	// KindGitStateOrdinary records that narrowd read the repository a git call meets and found it ordinary (point in time: it changes nothing).
	KindGitStateOrdinary EvidenceKind = "git-state-ordinary"
	// KindLinksWalked records that narrowd walked a tree a recursive read follows links in and found none leaving the workspace (point in time).
	KindLinksWalked EvidenceKind = "links-walked"
	// KindStandingConfig finds a write target that is standing configuration (a dot segment not on the inert list, or a file other tools load); it raises scope.
	KindStandingConfig EvidenceKind = "standing-config"
	// KindOwnFile finds a call that would change one of narrowd's own files; it raises scope, and the engine denies the call.
	KindOwnFile EvidenceKind = "narrowd-own-file"
	// KindAdmin finds a call that runs one of narrowd's own administrative commands; the engine denies the call.
	KindAdmin EvidenceKind = "narrowd-admin"
	// KindSandboxContain records what narrowd saw from outside of its own sandbox's containment (read-only protected paths, HOME hidden, a private /proc, limits); established, it changes nothing by itself.
	KindSandboxContain EvidenceKind = "sandbox-contain"
	// KindSandboxUndo records that narrowd's sandbox keeps every workspace change of the run in an overlay it verified, to apply and undo (narrowd undo ID); established, it bounds reversibility.
	KindSandboxUndo EvidenceKind = "sandbox-undo"
)

// evidenceKinds lists every constant above, sorted.
var evidenceKinds = []EvidenceKind{
	KindAgentPermissionMode, KindAgentSandbox, KindBesideCode, KindBoundedPaths, KindBoundedRoot,
	KindFactBound, KindGitConfigRunsCode, KindGitStateOrdinary, KindGlobInside, KindGlobTooMany,
	KindGlobUnreadable, KindHarmlessDevice, KindKnownCommand, KindLabelBound, KindLinkEscape,
	KindLinksWalked, KindMissingArgument, KindAdmin, KindOwnFile, KindNetworkRedirect,
	KindNoNarrowing, KindNoNetwork, KindNoProgram, KindOneTarget, KindOverBudget, KindParseError,
	KindPatchAddsOnly, KindPatchFiles, KindPatchNoDelete, KindPatchUnreadable, KindPathInside,
	KindPathNotAbsolute, KindPathOutside, KindPatternEscapes, KindPrivileged, KindRunsCode,
	KindSandboxContain, KindSandboxExec, KindSandboxTicket, KindSandboxUndo, KindSearchInside,
	KindSensitiveName, KindSensitiveWord, KindSnapshot, KindStandingConfig, KindUnknownCommand,
	KindUnlabelled, KindUnproven, KindURL,
}

// EvidenceKinds returns every kind narrowd emits, sorted.
func EvidenceKinds() []EvidenceKind { return slices.Clone(evidenceKinds) }

// Known reports whether narrowd emits evidence of kind k.
func (k EvidenceKind) Known() bool {
	_, found := slices.BinarySearch(evidenceKinds, k)
	return found
}

// Effect is what one piece of evidence does to the labels, written as
//
//	none                   recorded only (the zero Effect reads as none too)
//	mutation<=read         a proven upper bound on one label
//	fact:open_world=false  a proven value of one fact
//	raise:scope            hold the label at its ceiling
//
// Build one with [Bound], [FactFalse], [Raise] or [NoEffect]; read it with
// [Effect.Bound], [Effect.FactFalse] and [Effect.Raised]. The text is the
// public JSON form of [Evidence.Effect].
type Effect string

// NoEffect is the effect of evidence that is only recorded.
const NoEffect Effect = "none"

// effectTexts holds the text of every bound and every fact proven false,
// built once: a proven call carries one per label and fact, and building
// them per call was an allocation each.
type effectTexts struct {
	bounds    [NumDims][]Effect
	factFalse [NumFacts]Effect
	raises    [NumDims]Effect
}

var builtEffects = func() (t effectTexts) {
	for _, d := range Dims() {
		for v := range d.Values() {
			t.bounds[d] = append(t.bounds[d], Effect(d.String()+"<="+d.Name(Level(v))))
		}
		t.raises[d] = Effect("raise:" + d.String())
	}
	for f := range Fact(NumFacts) {
		t.factFalse[f] = Effect("fact:" + f.String() + "=false")
	}
	return t
}()

// Bound is the effect "label d is at most v".
func Bound(d Dim, v Level) Effect {
	if d < NumDims && int(v) < len(builtEffects.bounds[d]) {
		return builtEffects.bounds[d][v]
	}
	return Effect(d.String() + "<=" + d.Name(v))
}

// FactFalse is the effect "fact f is false".
func FactFalse(f Fact) Effect {
	if f < NumFacts {
		return builtEffects.factFalse[f]
	}
	return Effect("fact:" + f.String() + "=false")
}

// Raise is the effect "hold label d at its ceiling".
func Raise(d Dim) Effect {
	if d < NumDims {
		return builtEffects.raises[d]
	}
	return Effect("raise:" + d.String())
}

// Bound returns the label and value of a bound effect.
func (e Effect) Bound() (Dim, Level, bool) {
	name, val, ok := strings.Cut(string(e), "<=")
	if !ok {
		return 0, 0, false
	}
	d, err := ParseDim(name)
	if err != nil {
		return 0, 0, false
	}
	v, err := d.Parse(val)
	if err != nil {
		return 0, 0, false
	}
	return d, v, true
}

// FactFalse returns the fact a fact effect proves false. An effect that
// would prove a fact true is no narrowing and reads as none.
func (e Effect) FactFalse() (Fact, bool) {
	rest, ok := strings.CutPrefix(string(e), "fact:")
	if !ok {
		return 0, false
	}
	name, val, ok := strings.Cut(rest, "=")
	if !ok || val != strconv.FormatBool(false) {
		return 0, false
	}
	f, err := ParseFact(name)
	return f, err == nil
}

// Raised returns the label a raise effect holds at its ceiling.
func (e Effect) Raised() (Dim, bool) {
	name, ok := strings.CutPrefix(string(e), "raise:")
	if !ok {
		return 0, false
	}
	d, err := ParseDim(name)
	return d, err == nil
}

// Valid reports whether e is one of the four forms.
func (e Effect) Valid() bool {
	if e == NoEffect || e == "" {
		return true
	}
	_, _, bound := e.Bound()
	_, fact := e.FactFalse()
	_, raised := e.Raised()
	return bound || fact || raised
}
