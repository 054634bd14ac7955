package rules

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"
)

// A rule's `when` is a CEL expression over four variables:
//
//	call      the call, with the narrowed labels:
//	            agent, tool, key, cwd      strings ("claude", "Bash", "claude/Bash", "/repo")
//	            input                      the tool's arguments as the agent sent them
//	            labelled, unlabelled       whether the catalog has labels for the tool
//	            mutation … returns_class   the six narrowed labels, as spec value names
//	            open_world, configuration_object, pure_deletion   the facts
//	            reads_untrusted, external_effect, destructive, moves_money   seed 003 labels (see [SessionLabels])
//	            reads_sensitive            evidence of a sensitive name (always present)
//	            risk_class                 the seed 004 class (see [RiskClass])
//	            program, argv              for a shell call proven to run exactly one program
//	                                       (see [ShellCommand]) its name and words; absent otherwise
//	ceiling   the tool's un-narrowed labels and facts (same label keys)
//	evidence  a list of {kind, strength, subject, detail, effect}
//	session   {known, tools (absent when not known)}, and session.called_with("reads_untrusted")
//
// and these helpers, which read `call`:
//
//	at_least("scope", "bulk")                  narrowed label ≥ value in spec order
//	at_most("egress", "none")                  narrowed label ≤ value
//	consequence_at_or_above("irreversible")    seed 001 class of the reversibility label
//	has_evidence("runs-code")                  some evidence of that kind, any strength
//	proven("path-inside")                      some evidence of that kind that may relax (proven or established)
//	command_is("git status")                   the call is exactly one proven program whose words start with these
//	command_exactly("git status")              the same, with no further words
//
// Evidence kinds named in has_evidence, proven or compared with an
// evidence's kind must be kinds narrowd emits ([EvidenceKinds]).
//
// A rule that lets a call run (allow or sandbox) may not read call.input,
// nor an evidence's subject or detail: those hold text whose meaning to
// the tool narrowd has not proven (call.input.command.startsWith("git
// status") also holds for "git status; rm -rf ~/x"), so a grant on them is
// a grant on silence. Loading refuses such a rule with its line, and when
// it evaluates such rules the activation hides the input and those
// fields anyway (see [activation.restrict]), so no indirect read (a loop
// over call's keys) sees them either. Deny and ask rules read everything.
//
// Absent is unknown (seed 001): for an unlabelled tool the label, fact and
// derived keys are absent from call and ceiling, so a rule that reads them
// fails to evaluate, and a rule that fails to evaluate does not match. To
// keep such calls away from rules written about labels altogether, a rule
// is evaluated for an unlabelled call only if its `when` mentions
// call.unlabelled or call.labelled, or compares call.risk_class with
// "unlabelled". Every other rule is skipped.

// Names of the hidden functions the helper macros expand to. They start
// with '@', which no CEL identifier can, so a profile cannot call them
// directly.
const (
	fnAtLeast        = "@at_least"
	fnAtMost         = "@at_most"
	fnConsequence    = "@consequence_at_or_above"
	fnHasEvidence    = "@has_evidence"
	fnProven         = "@proven"
	fnCommandIs      = "@command_is"
	fnCommandExactly = "@command_exactly"
	fnCalledWith     = "called_with"
	varCall          = "call"
	varCeiling       = "ceiling"
	varEvidence      = "evidence"
	varSession       = "session"
	keyLabelled      = "labelled"
	keyUnlabelled    = "unlabelled"
	keyRiskClass     = "risk_class"
	keyInput         = "input"
	keyAgent         = "agent"
	keyTool          = "tool"
	keyKey           = "key"
	keyCwd           = "cwd"
	keyKnown         = "known"
	keyTools         = "tools"
	keyProgram       = "program"
	keyArgv          = "argv"
	fieldSubject     = "subject"
	fieldDetail      = "detail"
	fieldKind        = "kind"
	fieldEffect      = "effect"
	fieldStrength    = "strength"
)

// helperMacros maps each helper to its hidden function and argument count.
var helperMacros = [...]struct {
	name, fn string
	args     int
}{
	{"at_least", fnAtLeast, 2},
	{"at_most", fnAtMost, 2},
	{"consequence_at_or_above", fnConsequence, 1},
	{"has_evidence", fnHasEvidence, 1},
	{"proven", fnProven, 1},
	{"command_is", fnCommandIs, 1},
	{"command_exactly", fnCommandExactly, 1},
}

// callKeys are the keys of `call` that every call has; labelKeys the ones
// only a labelled call has.
var (
	callKeys    = []string{keyAgent, keyTool, keyKey, keyCwd, keyInput, keyLabelled, keyUnlabelled, keyRiskClass, markReadsSensitive}
	commandKeys = []string{keyProgram, keyArgv}
	labelKeys   = []string{
		"mutation", "scope", "reversibility", "egress", "financial", "returns_class",
		"open_world", "configuration_object", "pure_deletion",
		markReadsUntrusted, markExternalEffect, markDestructive, markMovesMoney,
	}
	sessionKeys = []string{keyKnown, keyTools}
)

// newEnv builds the CEL environment profiles compile in. It is built per
// load, never shared through a global.
func newEnv() (*cel.Env, error) {
	mapT := cel.MapType(cel.StringType, cel.DynType)
	// The hidden functions take their first argument as dyn, not as a map:
	// the runtime type guard of a map parameter walks the whole map on
	// every call, and each function checks what it was given itself.
	opts := []cel.EnvOption{
		cel.Variable(varCall, mapT),
		cel.Variable(varCeiling, mapT),
		cel.Variable(varEvidence, cel.ListType(cel.MapType(cel.StringType, cel.StringType))),
		cel.Variable(varSession, mapT),
		cel.Function(fnCalledWith, cel.MemberOverload("session_called_with_string",
			[]*cel.Type{cel.DynType, cel.StringType}, cel.BoolType, cel.BinaryBinding(calledWith))),
		cel.Function(fnAtLeast, cel.Overload("narrowd_at_least",
			[]*cel.Type{cel.DynType, cel.StringType, cel.StringType}, cel.BoolType,
			cel.FunctionBinding(func(args ...ref.Val) ref.Val { return compareLabel(args, true) }))),
		cel.Function(fnAtMost, cel.Overload("narrowd_at_most",
			[]*cel.Type{cel.DynType, cel.StringType, cel.StringType}, cel.BoolType,
			cel.FunctionBinding(func(args ...ref.Val) ref.Val { return compareLabel(args, false) }))),
		cel.Function(fnConsequence, cel.Overload("narrowd_consequence_at_or_above",
			[]*cel.Type{cel.DynType, cel.StringType}, cel.BoolType, cel.BinaryBinding(consequenceAtOrAbove))),
		cel.Function(fnHasEvidence, cel.Overload("narrowd_has_evidence",
			[]*cel.Type{cel.DynType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(func(c, k ref.Val) ref.Val { return findEvidence(c, k, false) }))),
		cel.Function(fnProven, cel.Overload("narrowd_proven",
			[]*cel.Type{cel.DynType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(func(c, k ref.Val) ref.Val { return findEvidence(c, k, true) }))),
		cel.Function(fnCommandIs, cel.Overload("narrowd_command_is",
			[]*cel.Type{cel.DynType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(func(c, p ref.Val) ref.Val { return commandMatches(c, p, false) }))),
		cel.Function(fnCommandExactly, cel.Overload("narrowd_command_exactly",
			[]*cel.Type{cel.DynType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(func(c, p ref.Val) ref.Val { return commandMatches(c, p, true) }))),
	}
	// Each helper is a global macro that passes `call` to its hidden
	// function; a wrong argument count is a compile error that names it.
	macros := make([]cel.Macro, 0, len(helperMacros))
	for _, h := range helperMacros {
		macros = append(macros, cel.GlobalVarArgMacro(h.name,
			func(eh cel.MacroExprFactory, _ ast.Expr, args []ast.Expr) (ast.Expr, *cel.Error) {
				if len(args) != h.args {
					var id int64
					if len(args) > 0 {
						id = args[0].ID()
					}
					return nil, eh.NewError(id, fmt.Sprintf("%s takes %d argument(s), not %d", h.name, h.args, len(args)))
				}
				return eh.NewCall(h.fn, append([]ast.Expr{eh.NewIdent(varCall)}, args...)...), nil
			}))
	}
	opts = append(opts, cel.Macros(macros...))
	return cel.NewEnv(opts...)
}

// fields is what a lazily built CEL map knows how to answer.
type fields interface {
	// field returns the value of key, or false when the key is absent.
	field(key string) (ref.Val, bool)
	// keys lists the keys present, for iteration and equality.
	keys() []string
}

// objMap is a CEL map backed by Go values. Field access, the only thing
// rules do often, goes straight to fields.field; everything else (iterate,
// compare, convert) builds an ordinary CEL map once and asks it.
type objMap struct {
	f    fields
	full traits.Mapper
}

var (
	_ traits.Mapper          = (*objMap)(nil)
	_ interpreter.Activation = (*activation)(nil)
)

func (m *objMap) built() traits.Mapper {
	if m.full == nil {
		keys := m.f.keys()
		vals := make(map[ref.Val]ref.Val, len(keys))
		for _, k := range keys {
			if v, ok := m.f.field(k); ok {
				vals[types.String(k)] = v
			}
		}
		m.full = types.NewRefValMap(types.DefaultTypeAdapter, vals)
	}
	return m.full
}

func (m *objMap) ConvertToNative(t reflect.Type) (any, error) { return m.built().ConvertToNative(t) }
func (m *objMap) ConvertToType(t ref.Type) ref.Val            { return m.built().ConvertToType(t) }
func (m *objMap) Equal(other ref.Val) ref.Val                 { return m.built().Equal(other) }
func (m *objMap) Type() ref.Type                              { return types.MapType }
func (m *objMap) Value() any                                  { return m.built().Value() }
func (m *objMap) Iterator() traits.Iterator                   { return m.built().Iterator() }
func (m *objMap) Size() ref.Val                               { return m.built().Size() }

func (m *objMap) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return m.built().Find(key)
	}
	return m.f.field(string(k))
}

func (m *objMap) Contains(key ref.Val) ref.Val {
	_, ok := m.Find(key)
	return types.Bool(ok)
}

func (m *objMap) Get(key ref.Val) ref.Val {
	if v, ok := m.Find(key); ok {
		return v
	}
	return m.built().Get(key)
}

// labelField answers the label and fact keys of l.
func labelField(l *Labels, key string) (ref.Val, bool) {
	switch key {
	case "mutation":
		return labelVal(l, Mutation), true
	case "scope":
		return labelVal(l, Scope), true
	case "reversibility":
		return labelVal(l, Reversibility), true
	case "egress":
		return labelVal(l, Egress), true
	case "financial":
		return labelVal(l, Financial), true
	case "returns_class":
		return labelVal(l, ReturnsClass), true
	case "open_world":
		return types.Bool(l.Facts[OpenWorld]), true
	case "configuration_object":
		return types.Bool(l.Facts[ConfigurationObject]), true
	case "pure_deletion":
		return types.Bool(l.Facts[PureDeletion]), true
	}
	return nil, false
}

// labelVals holds each label value as a CEL string, built once: rules
// read labels on every decision, and boxing the string each time was an
// allocation per read.
var labelVals = func() (t [NumDims][]ref.Val) {
	for _, d := range Dims() {
		for _, v := range d.Values() {
			t[d] = append(t[d], types.String(v))
		}
	}
	return t
}()

// labelVal is label d of l as a CEL string.
func labelVal(l *Labels, d Dim) ref.Val {
	if v := int(l.Levels[d]); v < len(labelVals[d]) {
		return labelVals[d][v]
	}
	return types.String(l.Value(d))
}

// callFields is `call`.
type callFields struct {
	in    *Input
	call  *Call
	lab   *Labels // narrowed; nil when unlabelled
	input ref.Val
	// restricted hides the input, for rules that let a call run.
	restricted bool
}

func (c *callFields) field(key string) (ref.Val, bool) {
	switch key {
	case keyAgent:
		return types.String(c.call.Agent), true
	case keyTool:
		return types.String(c.call.Tool), true
	case keyKey:
		return types.String(c.in.Key), true
	case keyCwd:
		return types.String(c.call.Cwd), true
	case keyLabelled:
		return types.Bool(c.lab != nil), true
	case keyUnlabelled:
		return types.Bool(c.lab == nil), true
	case keyRiskClass:
		return types.String(RiskClass(c.lab, c.call.Tool)), true
	case markReadsSensitive:
		return types.Bool(readsSensitive(c.in.Evidence)), true
	case keyProgram:
		if c.in.Command == nil || len(c.in.Command.Argv) == 0 {
			return nil, false
		}
		return types.String(c.in.Command.Argv[0]), true
	case keyArgv:
		if c.in.Command == nil || len(c.in.Command.Argv) == 0 {
			return nil, false
		}
		return types.NewStringList(types.DefaultTypeAdapter, c.in.Command.Argv), true
	case keyInput:
		if c.restricted {
			return nil, false
		}
		if c.input == nil {
			in := c.call.Input
			if in == nil {
				in = map[string]any{}
			}
			c.input = types.NewStringInterfaceMap(types.DefaultTypeAdapter, in)
		}
		return c.input, true
	}
	if c.lab == nil {
		return nil, false
	}
	switch key {
	case markReadsUntrusted, markExternalEffect, markDestructive, markMovesMoney:
		return types.Bool(carries(c.lab, c.in.Evidence, key)), true
	}
	return labelField(c.lab, key)
}

func (c *callFields) keys() []string {
	keys := callKeys
	if c.restricted {
		keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == keyInput })
	}
	if c.in.Command != nil && len(c.in.Command.Argv) > 0 {
		keys = append(slices.Clip(keys), commandKeys...)
	}
	if c.lab == nil {
		return keys
	}
	return append(slices.Clip(keys), labelKeys...)
}

// labelFields is `ceiling`: the labels and facts, or nothing when the tool
// is unlabelled.
type labelFields struct{ lab *Labels }

func (c labelFields) field(key string) (ref.Val, bool) {
	if c.lab == nil {
		return nil, false
	}
	return labelField(c.lab, key)
}

func (c labelFields) keys() []string {
	if c.lab == nil {
		return nil
	}
	return labelKeys[:NumDims+NumFacts]
}

// sessionFields is `session`. When narrowd does not know the session,
// tools is absent rather than empty: an unknown history is not a clean
// one, so a rule that reads it fails instead of matching.
type sessionFields struct{ s *Session }

func (c sessionFields) field(key string) (ref.Val, bool) {
	switch key {
	case keyKnown:
		return types.Bool(c.s.Known), true
	case keyTools:
		if !c.s.Known {
			return nil, false
		}
		return types.NewStringList(types.DefaultTypeAdapter, c.s.Tools), true
	}
	return nil, false
}

func (c sessionFields) keys() []string {
	if !c.s.Known {
		return sessionKeys[:1]
	}
	return sessionKeys
}

// activation resolves the four variables of a rule for one call. It is
// built per Decide and used by one goroutine only.
type activation struct {
	in *Input
	// inVal holds the input of a pooled activation (in points at it).
	inVal    Input
	call     objMap
	callF    callFields
	ceiling  objMap
	session  objMap
	evidence ref.Val
	// restricted hides the subject and detail of evidence, for allow
	// rules (see restrict).
	restricted bool
}

func newActivation(in *Input) *activation {
	a := &activation{}
	a.init(in)
	return a
}

// activations are reused by Decide: building one per call (with the
// input it points at) was a few percent of a decision's garbage.
var activations = sync.Pool{New: func() any { return new(activation) }}

// pooledActivation returns a reset activation for a copy of in, which it
// holds itself so that in need not escape; release it after the last
// Eval.
func pooledActivation(in *Input) *activation {
	a := activations.Get().(*activation)
	a.inVal = *in
	a.init(&a.inVal)
	return a
}

// release clears a (nothing of this call stays reachable from the pool)
// and returns it.
func (a *activation) release() {
	*a = activation{}
	activations.Put(a)
}

// init points a at in and clears what it caches.
func (a *activation) init(in *Input) {
	inVal := a.inVal
	*a = activation{in: in, inVal: inVal}
	c := in.Call
	if c == nil {
		c = &Call{}
	}
	var narrowed *Labels
	if in.Ceiling != nil {
		narrowed = in.Narrowed
		if narrowed == nil {
			narrowed = in.Ceiling
		}
	}
	a.callF = callFields{in: in, call: c, lab: narrowed}
	a.call.f = &a.callF
	a.ceiling.f = labelFields{lab: in.Ceiling}
	a.session.f = sessionFields{s: &in.Session}
}

// restrict hides from the rules evaluated next what a rule with outcome
// o may not read: for sandbox and allow the call's input, and for allow
// also the subject and detail of each evidence (text whose meaning
// narrowd has not proven; a sandbox rule may read the words of the
// programs it confines). Loading already refuses rules that read them
// directly; this covers the indirect reads (iterating call's keys,
// comparing whole maps). Decide evaluates rules from deny to allow, so
// each step restricts at most once.
func (a *activation) restrict(o Outcome) {
	if o <= Sandbox && !a.callF.restricted {
		a.callF.restricted = true
		a.call.full = nil
	}
	if o == Allow && !a.restricted {
		a.restricted = true
		a.evidence = nil
	}
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varCall:
		return &a.call, true
	case varCeiling:
		return &a.ceiling, true
	case varSession:
		return &a.session, true
	case varEvidence:
		if a.evidence == nil {
			list := make([]ref.Val, len(a.in.Evidence))
			for i, e := range a.in.Evidence {
				subject, detail := e.Subject, e.Detail
				if a.restricted {
					subject, detail = "", ""
				}
				list[i] = types.NewStringStringMap(types.DefaultTypeAdapter, map[string]string{
					fieldKind: string(e.Kind), fieldStrength: e.Strength.String(), fieldSubject: subject,
					fieldDetail: detail, fieldEffect: string(e.Effect),
				})
			}
			a.evidence = types.NewRefValList(types.DefaultTypeAdapter, list)
		}
		return a.evidence, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

// callOf returns the call behind the first argument of a hidden helper,
// which the macros always set to the variable `call`.
func callOf(v ref.Val) (*callFields, ref.Val) {
	if m, ok := v.(*objMap); ok {
		if c, ok := m.f.(*callFields); ok {
			return c, nil
		}
	}
	return nil, types.NewErr("helper used where call is not the call")
}

// compareLabel implements at_least (atLeast) and at_most on the narrowed
// labels. An unlabelled call, an unknown label or an unknown value is an
// evaluation error, so the rule does not match.
func compareLabel(args []ref.Val, atLeast bool) ref.Val {
	if len(args) != 3 {
		return types.NewErr("want 2 arguments")
	}
	c, errv := callOf(args[0])
	if errv != nil {
		return errv
	}
	name, ok1 := args[1].(types.String)
	value, ok2 := args[2].(types.String)
	if !ok1 || !ok2 {
		return types.NewErr("label and value must be strings")
	}
	d, err := ParseDim(string(name))
	if err != nil {
		return types.NewErr("%v", err)
	}
	v, err := d.Parse(string(value))
	if err != nil {
		return types.NewErr("%v", err)
	}
	if c.lab == nil {
		return types.NewErr("unlabelled tool: %s is unknown", d)
	}
	if atLeast {
		return types.Bool(c.lab.Levels[d] >= v)
	}
	return types.Bool(c.lab.Levels[d] <= v)
}

func consequenceAtOrAbove(cv, class ref.Val) ref.Val {
	c, errv := callOf(cv)
	if errv != nil {
		return errv
	}
	s, ok := class.(types.String)
	if !ok {
		return types.NewErr("consequence class must be a string")
	}
	want, ok := parseConsequence(string(s))
	if !ok {
		return types.NewErr("unknown consequence class %q", string(s))
	}
	if c.lab == nil {
		return types.NewErr("unlabelled tool: consequence is unknown")
	}
	return types.Bool(consequence(c.lab) >= want)
}

func findEvidence(cv, kind ref.Val, mayRelax bool) ref.Val {
	c, errv := callOf(cv)
	if errv != nil {
		return errv
	}
	k, ok := kind.(types.String)
	if !ok {
		return types.NewErr("evidence kind must be a string")
	}
	for i := range c.in.Evidence {
		e := &c.in.Evidence[i]
		if e.Kind == EvidenceKind(k) && (!mayRelax || e.Strength.MayRelax()) {
			return types.True
		}
	}
	return types.False
}

// commandMatches implements command_is (exact false) and
// command_exactly: the call is a proven single program (see
// [ShellCommand]) whose words start with, or are exactly, the words of
// the pattern.
func commandMatches(cv, pattern ref.Val, exact bool) ref.Val {
	c, errv := callOf(cv)
	if errv != nil {
		return errv
	}
	p, ok := pattern.(types.String)
	if !ok {
		return types.NewErr("command pattern must be a string")
	}
	return types.Bool(commandIs(c.in.Command, string(p), exact) && argumentsProven(c.in.Evidence))
}

// argumentsProven reports that nothing narrowd found about the call's
// arguments holds it back: no evidence raises a label (a sensitive name,
// a link out of the workspace, repository configuration that runs code)
// and no path is outside the workspace. command_is says what program
// runs; this keeps it from also granting what the program is pointed at
// (command_is("cat") is not cat /home/me/notes).
func argumentsProven(ev []Evidence) bool {
	for i := range ev {
		if _, raises := ev[i].Effect.Raised(); raises || ev[i].Kind == KindPathOutside {
			return false
		}
	}
	return true
}

// commandIs reports whether cmd's words start with (or, when exact, are)
// the space-separated words of pattern. A nil cmd, not proven to be one
// program, never matches; nor does an empty pattern.
func commandIs(cmd *ShellCommand, pattern string, exact bool) bool {
	want := strings.Fields(pattern)
	if cmd == nil || len(want) == 0 || len(cmd.Argv) < len(want) || exact && len(cmd.Argv) != len(want) {
		return false
	}
	return slices.Equal(cmd.Argv[:len(want)], want)
}

// commandWord reports a word a command pattern may hold: the characters
// of ordinary program names, subcommands and flags, and none that the
// shell would treat specially, so a pattern reads as what it matches.
func commandWord(w string) bool {
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-_./:=+,@%", c) >= 0:
		default:
			return false
		}
	}
	return w != ""
}

// calledWith implements session.called_with(label): whether an earlier
// call in the session carried the seed 003 label. An unknown session
// answers true: unknown never counts as clean.
func calledWith(sv, label ref.Val) ref.Val {
	m, ok := sv.(*objMap)
	var s sessionFields
	if ok {
		s, ok = m.f.(sessionFields)
	}
	if !ok {
		return types.NewErr("called_with works only on session")
	}
	l, ok := label.(types.String)
	if !ok || !isSessionMark(string(l)) {
		return types.NewErr("unknown session label %v", label)
	}
	if !s.s.Known {
		return types.True
	}
	return types.Bool(s.s.Called[string(l)])
}

// exprFacts is what the static walk of a checked `when` learns.
type exprFacts struct {
	// unlabelled reports that the rule mentions call.unlabelled or
	// call.labelled, so it is evaluated for unlabelled calls too.
	unlabelled bool
	// loops reports a comprehension (all, exists, map, filter…): the only
	// construct whose cost can grow faster than the input it reads.
	loops bool
	// sampleDep reports that the condition may read more than the labels
	// and facts (tool, input, evidence, session); factMask holds the facts
	// it may read, by [Fact] bit. The tighten-only check enumerates only
	// what a condition can see.
	sampleDep bool
	factMask  uint8
	// kinds are the string literals that could name an evidence kind,
	// for the tighten-only check's evidence sample.
	kinds []string
	// commands are the patterns of command_is and command_exactly, for
	// the tighten-only check's command sample.
	commands []string
	// usesCommand reports that the condition may read the
	// [ShellCommand] fact, which the engine then computes.
	usesCommand bool
	// inputReads are the places the condition reads call.input, and
	// evidenceReads those where it reads an evidence's subject or
	// detail: text narrowd has not proven, problems only in a rule that
	// lets a call run (input: allow and sandbox; evidence text: allow).
	inputReads, evidenceReads []exprProblem
	// evVars are the comprehension variables bound to an element of
	// evidence, whose kind comparisons name evidence kinds.
	evVars   map[string]bool
	problems []exprProblem
}

type exprProblem struct {
	id  int64
	msg string
}

// walkWhen checks a compiled `when` for names and values that can never
// match (spec P3: unknown values are errors, never defaults) and finds
// whether it mentions unlabelled.
func walkWhen(e ast.Expr) exprFacts {
	var f exprFacts
	f.walk(e, nil)
	return f
}

func (f *exprFacts) errorf(e ast.Expr, format string, args ...any) {
	f.problems = append(f.problems, exprProblem{id: e.ID(), msg: fmt.Sprintf(format, args...)})
}

// varField returns the variable and field of `v.field` or `v["field"]`
// when v is one of the profile variables and not shadowed.
func varField(e ast.Expr, bound map[string]bool) (v, field string, ok bool) {
	var operand ast.Expr
	switch e.Kind() {
	case ast.SelectKind:
		s := e.AsSelect()
		operand, field = s.Operand(), s.FieldName()
	case ast.CallKind:
		c := e.AsCall()
		if c.FunctionName() != "_[_]" || len(c.Args()) != 2 {
			return "", "", false
		}
		lit, ok := stringLit(c.Args()[1])
		if !ok {
			return "", "", false
		}
		operand, field = c.Args()[0], lit
	default:
		return "", "", false
	}
	if operand.Kind() != ast.IdentKind || bound[operand.AsIdent()] {
		return "", "", false
	}
	return operand.AsIdent(), field, true
}

func stringLit(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

func (f *exprFacts) walk(e ast.Expr, bound map[string]bool) {
	if v, field, ok := varField(e, bound); ok {
		// A field of a profile variable: the variable itself is not
		// used whole, so its identifier is not walked.
		f.checkField(e, v, field)
		if e.Kind() == ast.CallKind {
			f.walk(e.AsCall().Args()[1], bound)
		}
		return
	}
	switch e.Kind() {
	case ast.LiteralKind:
		if lit, ok := stringLit(e); ok && isKebab(lit) && !slices.Contains(f.kinds, lit) {
			f.kinds = append(f.kinds, lit)
		}
	case ast.IdentKind:
		switch name := e.AsIdent(); {
		case bound[name]:
		case name == varCall || name == varCeiling:
			// Used whole (iterated, compared, sized): anything about the
			// call may matter.
			f.sampleDep, f.factMask = true, allFacts
			f.usesCommand = f.usesCommand || name == varCall
		case name == varEvidence || name == varSession:
			f.sampleDep = true
		}
	case ast.SelectKind:
		if field := e.AsSelect().FieldName(); field == fieldSubject || field == fieldDetail {
			f.evidenceReads = append(f.evidenceReads, textRead(e, "an evidence's "+field))
		}
		f.walk(e.AsSelect().Operand(), bound)
	case ast.CallKind:
		c := e.AsCall()
		if lit, ok := indexLit(c); ok && (lit == fieldSubject || lit == fieldDetail) {
			f.evidenceReads = append(f.evidenceReads, textRead(e, "an evidence's "+lit))
		}
		f.checkCall(e, c, bound)
		if c.IsMemberFunction() {
			f.walk(c.Target(), bound)
		}
		args := c.Args()
		if isHelper(c.FunctionName()) && len(args) > 0 && args[0].Kind() == ast.IdentKind &&
			args[0].AsIdent() == varCall && !bound[varCall] {
			// The helper macros pass call: the helpers read the labels,
			// and has_evidence and proven the evidence.
			switch c.FunctionName() {
			case fnHasEvidence, fnProven:
				f.sampleDep = true
			case fnCommandIs, fnCommandExactly:
				f.sampleDep, f.usesCommand = true, true
			}
			args = args[1:]
		}
		for _, a := range args {
			f.walk(a, bound)
		}
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			f.walk(el, bound)
		}
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			me := en.AsMapEntry()
			f.walk(me.Key(), bound)
			f.walk(me.Value(), bound)
		}
	case ast.StructKind:
		for _, en := range e.AsStruct().Fields() {
			f.walk(en.AsStructField().Value(), bound)
		}
	case ast.ComprehensionKind:
		f.loops = true
		c := e.AsComprehension()
		f.walk(c.IterRange(), bound)
		if r := c.IterRange(); r.Kind() == ast.IdentKind && r.AsIdent() == varEvidence && !bound[varEvidence] {
			if f.evVars == nil {
				f.evVars = map[string]bool{}
			}
			if c.HasIterVar2() {
				f.evVars[c.IterVar2()] = true
			} else {
				f.evVars[c.IterVar()] = true
			}
		}
		inner := make(map[string]bool, len(bound)+3)
		for k := range bound {
			inner[k] = true
		}
		inner[c.IterVar()] = true
		if c.HasIterVar2() {
			inner[c.IterVar2()] = true
		}
		inner[c.AccuVar()] = true
		f.walk(c.AccuInit(), bound)
		f.walk(c.LoopCondition(), inner)
		f.walk(c.LoopStep(), inner)
		f.walk(c.Result(), inner)
	}
}

// indexLit returns the key of `x["key"]`.
func indexLit(c ast.CallExpr) (string, bool) {
	if c.FunctionName() != "_[_]" || len(c.Args()) != 2 {
		return "", false
	}
	return stringLit(c.Args()[1])
}

// textRead is the problem of a read of unproven text in a rule that
// lets a call run.
func textRead(e ast.Expr, what string) exprProblem {
	return exprProblem{id: e.ID(), msg: "a rule that lets a call run may not read " + what +
		": narrowd has not proven what that text means to the tool (call.input.command.startsWith(\"git status\") also holds for \"git status; rm -rf ~/x\"); " +
		"match a shell call with command_is(\"git status\") or command_exactly(…), a file tool with proven(\"path-inside\") and the labels, " +
		"or move the condition to an ask or deny rule, which may read it"}
}

func isHelper(fn string) bool {
	for _, h := range helperMacros {
		if h.fn == fn {
			return true
		}
	}
	return false
}

// allFacts is the fact mask of every fact.
const allFacts = 1<<NumFacts - 1

// checkField records what `v.field` reads and reports a field the
// variable can never have.
func (f *exprFacts) checkField(e ast.Expr, v, field string) {
	switch field {
	case "open_world":
		f.factMask |= 1 << OpenWorld
	case "configuration_object":
		f.factMask |= 1 << ConfigurationObject
	case "pure_deletion", markDestructive:
		f.factMask |= 1 << PureDeletion
	case keyRiskClass:
		f.factMask, f.sampleDep = allFacts, true
	case keyAgent, keyTool, keyKey, keyCwd, keyInput, markReadsSensitive:
		f.sampleDep = true
	}
	switch v {
	case varCall:
		if field == keyUnlabelled || field == keyLabelled {
			f.unlabelled = true
		}
		if field == keyInput {
			f.inputReads = append(f.inputReads, textRead(e, "call.input"))
		}
		if field == keyProgram || field == keyArgv {
			f.sampleDep, f.usesCommand = true, true
		}
		if !slices.Contains(callKeys, field) && !slices.Contains(labelKeys, field) && !slices.Contains(commandKeys, field) {
			f.errorf(e, "call has no field %q", field)
		}
	case varCeiling:
		if !slices.Contains(labelKeys[:NumDims+NumFacts], field) {
			f.errorf(e, "ceiling has no field %q (it holds the six labels and the facts)", field)
		}
	case varSession:
		f.sampleDep = true
		if !slices.Contains(sessionKeys, field) {
			f.errorf(e, "session has no field %q (want known or tools)", field)
		}
	}
}

// checkValue reports a string literal compared with a label or risk class
// that can never be equal to it.
func (f *exprFacts) checkValue(sel, lit ast.Expr, bound map[string]bool) {
	v, field, ok := varField(sel, bound)
	if !ok || (v != varCall && v != varCeiling) {
		return
	}
	s, ok := stringLit(lit)
	if !ok {
		return
	}
	if field == keyRiskClass && v == varCall {
		if s == "unlabelled" {
			// Only an unlabelled call has this class, so the rule is
			// about unlabelled calls.
			f.unlabelled = true
		}
		for _, c := range riskClasses {
			if c == s {
				return
			}
		}
		f.errorf(lit, "unknown risk class %q", s)
		return
	}
	d, err := ParseDim(field)
	if err != nil {
		return
	}
	if _, err := d.Parse(s); err != nil {
		f.errorf(lit, "%v", err)
	}
}

// isKebab reports whether s is a kebab-case identifier: lowercase letters
// and digits in words joined by single hyphens.
func isKebab(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && s[i-1] != '-':
		default:
			return false
		}
	}
	return true
}

// checkKind reports an evidence kind narrowd never emits.
func (f *exprFacts) checkKind(lit ast.Expr, s string) {
	if EvidenceKind(s).Known() {
		return
	}
	hint := ""
	if k, ok := nearestKind(s); ok {
		hint = fmt.Sprintf(" (did you mean %q?)", k)
	}
	f.errorf(lit, "unknown evidence kind %q%s: narrowd emits no evidence of that kind, so the condition never sees it and its negation always holds (PROFILES.md lists the kinds)", s, hint)
}

// nearestKind is the kind closest to s in edit distance, if close enough
// to be a typo.
func nearestKind(s string) (EvidenceKind, bool) {
	var best EvidenceKind
	bestD := 4
	for _, k := range evidenceKinds {
		if d := editDistance(strings.ToLower(s), string(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best, best != ""
}

// editDistance is the Levenshtein distance of a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// checkKindValue reports a literal compared with the kind of an evidence
// element (e.kind or e["kind"], e bound over evidence) that no evidence
// can have.
func (f *exprFacts) checkKindValue(sel, lit ast.Expr) {
	s, ok := stringLit(lit)
	if !ok {
		return
	}
	var operand ast.Expr
	var field string
	switch sel.Kind() {
	case ast.SelectKind:
		field, operand = sel.AsSelect().FieldName(), sel.AsSelect().Operand()
	case ast.CallKind:
		k, ok := indexLit(sel.AsCall())
		if !ok {
			return
		}
		field, operand = k, sel.AsCall().Args()[0]
	default:
		return
	}
	if operand.Kind() != ast.IdentKind || !f.evVars[operand.AsIdent()] {
		return
	}
	switch field {
	case fieldKind:
		f.checkKind(lit, s)
	case fieldEffect:
		if !Effect(s).Valid() {
			f.errorf(lit, "no evidence has effect %q (want none, LABEL<=VALUE, fact:FACT=false or raise:LABEL)", s)
		}
	case fieldStrength:
		if !slices.Contains(strengthNames[:], s) {
			f.errorf(lit, "unknown evidence strength %q (want one of %s)", s, strings.Join(strengthNames[:], ", "))
		}
	}
}

func (f *exprFacts) checkCall(e ast.Expr, c ast.CallExpr, bound map[string]bool) {
	args := c.Args()
	switch c.FunctionName() {
	case "_==_", "_!=_":
		if len(args) == 2 {
			f.checkValue(args[0], args[1], bound)
			f.checkValue(args[1], args[0], bound)
			f.checkKindValue(args[0], args[1])
			f.checkKindValue(args[1], args[0])
		}
	case "@in":
		if len(args) == 2 && args[1].Kind() == ast.ListKind {
			for _, el := range args[1].AsList().Elements() {
				f.checkValue(args[0], el, bound)
				f.checkKindValue(args[0], el)
			}
		}
	case fnAtLeast, fnAtMost:
		if len(args) != 3 {
			return
		}
		name, ok := stringLit(args[1])
		if !ok {
			return
		}
		d, err := ParseDim(name)
		if err != nil {
			f.errorf(args[1], "%v", err)
			return
		}
		if val, ok := stringLit(args[2]); ok {
			if _, err := d.Parse(val); err != nil {
				f.errorf(args[2], "%v", err)
			}
		}
	case fnConsequence:
		if len(args) == 2 {
			if s, ok := stringLit(args[1]); ok {
				if _, ok := parseConsequence(s); !ok {
					f.errorf(args[1], "unknown consequence class %q (want reversible, compensatable, forward_recoverable or irreversible)", s)
				}
			}
		}
	case fnHasEvidence, fnProven:
		if len(args) == 2 {
			// A kind computed at run time could be any string, one
			// narrowd never emits among them: only a literal is
			// checked, so only a literal is accepted.
			if s, ok := stringLit(args[1]); ok {
				f.checkKind(args[1], s)
			} else {
				name := strings.TrimPrefix(c.FunctionName(), "@")
				f.errorf(args[1], "%s takes a string literal naming an evidence kind, such as %s(\"path-inside\")", name, name)
			}
		}
	case fnCommandIs, fnCommandExactly:
		if len(args) != 2 {
			return
		}
		name := strings.TrimPrefix(c.FunctionName(), "@")
		s, ok := stringLit(args[1])
		if !ok {
			f.errorf(args[1], "%s takes a string literal, such as %s(\"git status\")", name, name)
			return
		}
		words := strings.Fields(s)
		if len(words) == 0 {
			f.errorf(args[1], "%s(%q) names no program", name, s)
			return
		}
		for _, w := range words {
			if !commandWord(w) {
				f.errorf(args[1], "%s(%q): %q is not a plain word (letters, digits and - _ . / : = + , @ %%): the pattern is the program's words separated by spaces, without quotes or shell syntax", name, s, w)
				return
			}
		}
		if !slices.Contains(f.commands, s) {
			f.commands = append(f.commands, s)
		}
	case fnCalledWith:
		if len(args) == 1 {
			if s, ok := stringLit(args[0]); ok && !isSessionMark(s) {
				f.errorf(args[0], "unknown session label %q (want reads_untrusted, external_effect, destructive, moves_money or reads_sensitive)", s)
			}
		}
	}
}
