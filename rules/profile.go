package rules

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/BurntSushi/toml"
	"github.com/bmatcuk/doublestar/v4"
)

// A profile is a TOML file:
//
//	name = "standard"                 # optional; defaults to the file name
//	description = "…"                 # optional
//	workspaces = ["/srv/shared"]      # optional extra workspace roots, absolute
//	sensitive = ["**/*.key"]          # optional doublestar patterns added to the sensitive names
//
//	[[rule]]
//	id = "read-workspace"             # kebab-case, unique
//	when = 'call.mutation == "read" && call.egress == "none"'   # CEL, see cel.go
//	then = "allow"                    # allow | ask | deny | sandbox
//	reason = "reads inside the workspace send nothing anywhere"
//
// Every rule whose `when` is true applies, and the most restrictive outcome
// wins: deny > ask > sandbox > allow. When no rule matches, the call is
// asked about. Decoding is strict: unknown keys, missing or duplicate ids,
// unknown outcomes, CEL errors, non-boolean conditions, unknown label values
// in comparisons, and allow or sandbox rules that grant because of risk
// (see [CheckProfile]) are all errors, reported together with file:line.

//go:embed profiles/*.toml
var builtinFS embed.FS

// Profile is a compiled profile. It is immutable and safe for concurrent
// use; reloading builds a new one.
type Profile struct {
	name        string
	description string
	workspaces  []string
	sensitive   []string
	rules       []*rule // file order
	order       []*rule // evaluation order: deny, ask, sandbox, allow; file order within each
	usesCommand bool
}

// Rule is one rule of a profile as written, for display.
type Rule struct {
	// ID is the rule's kebab-case id, which decisions name.
	ID string `json:"id"`
	// When is the CEL condition as written.
	When string `json:"when"`
	// Then is the outcome when the condition holds.
	Then Outcome `json:"then"`
	// Reason is written for the agent and the person.
	Reason string `json:"reason"`
	// Line is the line of the rule's [[rule]] header, 0 when unknown.
	Line int `json:"line"`
}

type rule struct {
	Rule
	whenLine int
	prog     cel.Program
	// unlabelled reports that `when` mentions call.unlabelled or
	// call.labelled: only such rules see unlabelled calls.
	unlabelled bool
	// sampleDep and factMask say what the tighten-only check must vary
	// (see exprFacts).
	sampleDep bool
	factMask  uint8
	kinds     []string
	commands  []string
	// usesCommand reports that `when` may read [Input.Command].
	usesCommand bool
}

// noMatch is the decision when no rule matched.
var noMatch = Decision{Outcome: Ask, Rule: "no-match", Reason: "no profile rule allowed this call"}

// Problem is one thing wrong with a profile file.
type Problem struct {
	// File is the file name the profile was loaded under.
	File string `json:"file"`
	// Line is 1-based; 0 when the problem has no single line.
	Line int `json:"line"`
	// Rule is the id of the rule concerned, if any.
	Rule string `json:"rule,omitempty"`
	// Message says what is wrong, lowercase, without the position.
	Message string `json:"message"`
}

// Error formats the problem as file:line: message.
func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Message)
}

// ProfileError is every problem that kept a profile from loading.
type ProfileError struct {
	// Problems are sorted by line.
	Problems []Problem
}

// Error lists the problems, one file:line: message per line.
func (e *ProfileError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns each problem as an error, for errors.As.
func (e *ProfileError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// LoadProfile compiles the profile in data, refusing it if anything is
// wrong, including an allow or sandbox rule that is not tighten-only (see
// check.go). filename is used in problems and, when the file has no name
// key, for the profile's name. The error, if any, is a [*ProfileError]
// listing every problem.
func LoadProfile(filename string, data []byte) (*Profile, error) {
	return loadProfile(filename, data, true)
}

func loadProfile(filename string, data []byte, tighten bool) (*Profile, error) {
	p, problems := compileProfile(filename, data, tighten)
	if len(problems) > 0 {
		return nil, &ProfileError{Problems: problems}
	}
	return p, nil
}

// CheckProfile returns every problem with the profile in data, including
// allow and sandbox rules that are not tighten-only. It is what `narrowd
// profile check FILE` prints; an empty result means [LoadProfile] succeeds.
func CheckProfile(filename string, data []byte) []Problem {
	_, problems := compileProfile(filename, data, true)
	return problems
}

// BuiltinProfileNames returns the names of the built-in profiles, sorted.
func BuiltinProfileNames() []string {
	entries, err := fs.ReadDir(builtinFS, "profiles")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok {
			names = append(names, n)
		}
	}
	return names
}

// BuiltinProfile loads the built-in profile called name: readonly,
// standard (the default) or strict. The built-ins pass [CheckProfile]
// (a test asserts it), so loading them skips the tighten-only enumeration,
// which keeps the hook shim's in-process fallback quick.
func BuiltinProfile(name string) (*Profile, error) {
	file := "profiles/" + name + ".toml"
	if !fs.ValidPath(file) || strings.ContainsAny(name, "/*?[") {
		return nil, fmt.Errorf("unknown built-in profile %q", name)
	}
	data, err := builtinFS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("unknown built-in profile %q (want one of %s): %w", name, strings.Join(BuiltinProfileNames(), ", "), err)
	}
	return loadProfile("builtin/"+name+".toml", data, false)
}

// Name returns the profile's name.
func (p *Profile) Name() string { return p.name }

// Description returns the profile's description, possibly empty.
func (p *Profile) Description() string { return p.description }

// Sensitive returns the doublestar patterns the profile adds to the
// sensitive names.
func (p *Profile) Sensitive() []string { return append([]string(nil), p.sensitive...) }

// Workspaces returns the extra workspace roots the profile declares.
func (p *Profile) Workspaces() []string { return append([]string(nil), p.workspaces...) }

// UsesCommand reports that some rule may read [Input.Command]
// (command_is, command_exactly, call.program, call.argv): the engine
// computes that fact only then.
func (p *Profile) UsesCommand() bool { return p.usesCommand }

// Rules returns the profile's rules in file order.
func (p *Profile) Rules() []Rule {
	out := make([]Rule, len(p.rules))
	for i, r := range p.rules {
		out[i] = r.Rule
	}
	return out
}

// Decide applies the profile to one call. Every matching rule applies and
// the most restrictive outcome wins; among rules with that outcome the
// first in the file names the decision. When nothing matches the call is
// asked about, with rule "no-match". If in.Narrowed is nil the ceiling
// counts as the narrowed labels.
//
// A rule whose condition fails to evaluate (a missing key, a wrong type, a
// helper given an unknown label, the cost limit) or is not a boolean does
// not match. An error never lets a call run, though: if a deny, ask or
// sandbox rule fails and the decision would otherwise be allow (or, for a
// failed deny or ask rule, sandbox), the call is asked about with rule
// "error-evaluation", since the failed rule might have stopped it.
//
// Absent is unknown (seed 001): for an unlabelled call (in.Ceiling == nil)
// only rules that mention call.unlabelled or call.labelled (or compare
// call.risk_class with "unlabelled") are evaluated; the rest are skipped,
// not failed.
func (p *Profile) Decide(in Input) Decision {
	act := pooledActivation(&in)
	defer act.release()
	unlabelled := in.Ceiling == nil
	var failed *rule // the most restrictive rule that failed so far
	for _, r := range p.order {
		if unlabelled && !r.unlabelled {
			continue
		}
		// p.order puts sandbox and allow rules last: from here on,
		// no rule sees unproven text.
		act.restrict(r.Then)
		match, ok := r.eval(act)
		if !ok {
			if failed == nil {
				failed = r
			}
			continue
		}
		if match {
			if failed != nil && failed.Then > r.Then && r.Then < Ask {
				return evalFailed(failed)
			}
			return Decision{Outcome: r.Then, Rule: r.ID, Reason: r.Reason}
		}
	}
	return noMatch
}

// evalFailed is the decision when rule r failed to evaluate and would
// otherwise have been overruled by a less restrictive rule.
func evalFailed(r *rule) Decision {
	return Decision{Outcome: Ask, Rule: "error-evaluation",
		Reason: fmt.Sprintf("profile rule %q could not be evaluated for this call, so narrowd cannot let it run without a person", r.ID)}
}

// eval evaluates the rule. ok is false when the condition failed to
// evaluate or is not a boolean.
func (r *rule) eval(act *activation) (match, ok bool) {
	out, _, err := r.prog.Eval(act)
	if err != nil {
		return false, false
	}
	b, isBool := out.(types.Bool)
	return bool(b), isBool
}

// matches reports whether the rule evaluates to true.
func (r *rule) matches(act *activation) bool {
	m, ok := r.eval(act)
	return m && ok
}

// compileProfile decodes, validates and compiles a profile, collecting
// every problem.
func compileProfile(filename string, data []byte, tighten bool) (*Profile, []Problem) {
	c := &compiler{file: filename, tighten: tighten}
	p := c.compile(data)
	sort.SliceStable(c.problems, func(i, j int) bool { return c.problems[i].Line < c.problems[j].Line })
	if len(c.problems) > 0 {
		return nil, c.problems
	}
	return p, nil
}

type compiler struct {
	file     string
	tighten  bool
	src      *srcIndex
	problems []Problem
}

func (c *compiler) add(line int, ruleID, format string, args ...any) {
	c.problems = append(c.problems, Problem{File: c.file, Line: line, Rule: ruleID, Message: fmt.Sprintf(format, args...)})
}

func (c *compiler) compile(data []byte) *Profile {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		if pe, ok := errors.AsType[toml.ParseError](err); ok {
			c.add(pe.Position.Line, "", "%s", strings.TrimPrefix(pe.Message, "toml: "))
		} else {
			c.add(0, "", "%v", err)
		}
		return nil
	}
	c.src = indexSource(string(data))
	p := &Profile{name: strings.TrimSuffix(path.Base(strings.ReplaceAll(c.file, "\\", "/")), path.Ext(c.file))}

	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sortByLine(keys, c.src.topLine)
	var rawRules any
	for _, k := range keys {
		v := raw[k]
		line := c.src.topLine(k)
		switch k {
		case "name":
			if s, ok := c.str(line, "", k, v); ok {
				if strings.TrimSpace(s) == "" {
					c.add(line, "", "name must not be empty")
				} else {
					p.name = s
				}
			}
		case "description":
			p.description, _ = c.str(line, "", k, v)
		case "workspaces":
			for _, s := range c.strList(line, k, v) {
				if !path.IsAbs(s) || strings.ContainsRune(s, 0) {
					c.add(line, "", "workspace %q must be an absolute path", s)
					continue
				}
				p.workspaces = append(p.workspaces, path.Clean(s))
			}
		case "sensitive":
			for _, s := range c.strList(line, k, v) {
				if s == "" || !doublestar.ValidatePattern(s) {
					c.add(line, "", "sensitive pattern %q is not a valid doublestar pattern", s)
					continue
				}
				p.sensitive = append(p.sensitive, s)
			}
		case "rule":
			rawRules = v
		default:
			c.add(line, "", "unknown key %q (want name, description, workspaces, sensitive or [[rule]])", k)
		}
	}

	env, err := newEnv()
	if err != nil {
		c.add(0, "", "internal error building the CEL environment: %v", err)
		return nil
	}
	list, ok := rawRules.([]map[string]any)
	if rawRules != nil && !ok {
		c.add(c.src.topLine("rule"), "", "rule must be an array of tables: write each rule under a [[rule]] header")
	}
	seen := make(map[string]int)
	for i, m := range list {
		if r := c.rule(env, i, m, seen); r != nil {
			p.rules = append(p.rules, r)
		}
	}
	// The tighten-only check runs on the rules that compiled even when
	// others did not, so one run reports everything.
	if c.tighten {
		c.checkTighten(p.rules)
	}
	if len(c.problems) > 0 {
		return nil
	}
	for _, o := range [...]Outcome{Deny, Ask, Sandbox, Allow} {
		for _, r := range p.rules {
			if r.Then == o {
				p.order = append(p.order, r)
			}
		}
	}
	for _, r := range p.rules {
		p.usesCommand = p.usesCommand || r.usesCommand
	}
	return p
}

func (c *compiler) str(line int, ruleID, key string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		c.add(line, ruleID, "%s must be a string, not %s", key, tomlKind(v))
	}
	return s, ok
}

func (c *compiler) strList(line int, key string, v any) []string {
	list, ok := v.([]any)
	if !ok {
		c.add(line, "", "%s must be a list of strings, not %s", key, tomlKind(v))
		return nil
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			c.add(line, "", "%s must be a list of strings, but holds %s", key, tomlKind(e))
			continue
		}
		out = append(out, s)
	}
	return out
}

func tomlKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	}
	return fmt.Sprintf("%T", v)
}

// ruleKeys are the keys of a [[rule]] table, in the order problems about
// missing keys are reported.
var ruleKeys = []string{"id", "when", "then", "reason"}

func (c *compiler) rule(env *cel.Env, i int, m map[string]any, seen map[string]int) *rule {
	blk := c.src.rule(i)
	header := blk.line
	name := fmt.Sprintf("rule %d", i+1)
	var r rule
	r.Line = header
	ok := true

	if v, has := m["id"]; has {
		line := blk.keyLine("id")
		if s, isStr := c.str(line, "", name+": id", v); isStr {
			switch {
			case !isKebab(s):
				c.add(line, "", "%s: id %q is not kebab-case (lowercase words joined by hyphens)", name, s)
				ok = false
			case s == noMatch.Rule || strings.HasPrefix(s, "error-"):
				c.add(line, s, "rule id %q is reserved for decisions no rule makes", s)
				ok = false
			case seen[s] != 0:
				c.add(line, s, "duplicate rule id %q (first at line %d)", s, seen[s])
				ok = false
			default:
				seen[s] = max(header, 1)
			}
			r.ID = s
			if isKebab(s) {
				name = fmt.Sprintf("rule %q", s)
			}
		} else {
			ok = false
		}
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sortByLine(keys, blk.keyLine)
	for _, k := range keys {
		switch k {
		case "id", "when", "then", "reason":
		default:
			c.add(blk.keyLine(k), r.ID, "%s: unknown key %q (want id, when, then and reason)", name, k)
			ok = false
		}
	}
	for _, k := range ruleKeys {
		if _, has := m[k]; !has {
			c.add(header, r.ID, "%s: missing %q", name, k)
			ok = false
		}
	}
	then := Deny // the outcome when known; deny reads everything
	if v, has := m["then"]; has {
		line := blk.keyLine("then")
		if s, isStr := c.str(line, r.ID, name+": then", v); isStr {
			o, err := ParseOutcome(s)
			if err != nil {
				c.add(line, r.ID, "%s: %v", name, err)
				ok = false
			}
			r.Then = o
			if err == nil {
				then = o
			}
		} else {
			ok = false
		}
	}
	if v, has := m["reason"]; has {
		line := blk.keyLine("reason")
		if s, isStr := c.str(line, r.ID, name+": reason", v); isStr {
			if strings.TrimSpace(s) == "" {
				c.add(line, r.ID, "%s: reason must not be empty: it is what the agent and the person read", name)
				ok = false
			}
			r.Reason = s
		} else {
			ok = false
		}
	}
	if v, has := m["when"]; has {
		line := blk.keyLine("when")
		s, isStr := c.str(line, r.ID, name+": when", v)
		if !isStr {
			return nil
		}
		r.When, r.whenLine = s, line
		compiled, good := c.compileWhen(env, line, blk.whenMulti, blk.whenNextLine, then, name, r.ID, s)
		if !good {
			return nil
		}
		r.prog, r.unlabelled = compiled.prog, compiled.unlabelled
		r.sampleDep, r.factMask, r.kinds, r.commands = compiled.sampleDep, compiled.factMask, compiled.kinds, compiled.commands
		r.usesCommand = compiled.usesCommand
	}
	if !ok || r.prog == nil {
		return nil
	}
	return &r
}

type compiledWhen struct {
	prog        cel.Program
	unlabelled  bool
	sampleDep   bool
	factMask    uint8
	kinds       []string
	commands    []string
	usesCommand bool
}

// compileWhen compiles one `when`. line is the line of the when key;
// multi reports a multi-line string, whose lines are the file's, and
// nextLine that the expression starts on the line after the key. then is
// the rule's outcome: a rule that lets a call run may not read unproven
// text (see cel.go).
func (c *compiler) compileWhen(env *cel.Env, line int, multi, nextLine bool, then Outcome, name, id, src string) (compiledWhen, bool) {
	at := func(exprLine int) int {
		if line == 0 || !multi {
			return line
		}
		if nextLine {
			return line + exprLine
		}
		return line + max(exprLine, 1) - 1
	}
	if strings.TrimSpace(src) == "" {
		c.add(line, id, "%s: when must not be empty", name)
		return compiledWhen{}, false
	}
	checked, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		for _, e := range iss.Errors() {
			c.add(at(e.Location.Line()), id, "%s: when: %s%s", name, e.Message, column(e.Location.Column()))
		}
		return compiledWhen{}, false
	}
	if t := checked.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		c.add(line, id, "%s: when must be a boolean condition, but its type is %s", name, t)
		return compiledWhen{}, false
	}
	facts := walkWhen(checked.NativeRep().Expr())
	switch then {
	case Allow:
		facts.problems = append(facts.problems, facts.inputReads...)
		facts.problems = append(facts.problems, facts.evidenceReads...)
	case Sandbox:
		facts.problems = append(facts.problems, facts.inputReads...)
	}
	if len(facts.problems) > 0 {
		info := checked.NativeRep().SourceInfo()
		for _, p := range facts.problems {
			loc := info.GetStartLocation(p.id)
			c.add(at(loc.Line()), id, "%s: when: %s%s", name, p.msg, column(loc.Column()))
		}
		return compiledWhen{}, false
	}
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if facts.loops {
		// Tracking cost doubles evaluation time, so only conditions that
		// loop pay for it: without a loop, the work is bounded by the
		// expression and the length of the strings it reads.
		opts = append(opts, cel.CostLimit(costLimit))
	}
	prog, err := env.Program(checked, opts...)
	if err != nil {
		c.add(line, id, "%s: when: %v", name, err)
		return compiledWhen{}, false
	}
	return compiledWhen{prog: prog, unlabelled: facts.unlabelled, sampleDep: facts.sampleDep, factMask: facts.factMask, kinds: facts.kinds, commands: facts.commands, usesCommand: facts.usesCommand}, true
}

// column formats a CEL column (0-based, negative when unknown) for a
// problem message.
func column(c int) string {
	if c < 0 {
		return ""
	}
	return fmt.Sprintf(" (column %d)", c+1)
}

// costLimit bounds the work one rule may do for one call, in CEL cost
// units (about one per operation or list element visited). A rule that
// exceeds it fails to evaluate, which never lets a call run.
const costLimit = 100_000

// sortByLine sorts keys by the line they appear on, then by name, so
// problems come out in file order and the same on every run.
func sortByLine(keys []string, line func(string) int) {
	sort.Slice(keys, func(i, j int) bool {
		li, lj := line(keys[i]), line(keys[j])
		if li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
}
