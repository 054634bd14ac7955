package rules

import (
	"fmt"
	"strings"
)

// Tighten-only (seed 001: a declaration may only tighten). A rule that
// lets a call run (allow, or sandbox, which runs it confined) must never
// grant *because* a call is riskier: if it matches a call, it must match
// every call that is one step less risky and otherwise the same. The label
// space is finite, so the check enumerates it: the 648 combinations of the
// six labels times open_world, pure_deletion and configuration_object. A
// call is one step riskier when one label is one value higher, or when
// open_world or pure_deletion turns from false to true.
// configuration_object is enumerated but never stepped: it marks a
// different situation (spec §4.2), not a riskier one.
//
// Everything else about the call (tool, input, evidence, session) is fixed
// to a few neutral samples, plus one that holds evidence of every kind the
// rule names, and the ceiling equals the narrowed labels. A
// rule whose grant depends on those parts (a tool name, an agent, an input
// field) is only checked for the samples' values: the check proves the
// labels are used in the right direction, not that every condition is
// wise.

const (
	numLabelCombos = 4 * 3 * 3 * 3 * 3 * 2
	numStates      = numLabelCombos * 8
)

// stateLabels decodes state i: the labels in mixed radix, then
// open_world, pure_deletion and configuration_object as three bits.
func stateLabels(i int) Labels {
	var l Labels
	l.Facts[ConfigurationObject] = i&1 != 0
	l.Facts[PureDeletion] = i&2 != 0
	l.Facts[OpenWorld] = i&4 != 0
	i >>= 3
	for d := Dim(NumDims) - 1; ; d-- {
		n := int(d.Max()) + 1
		l.Levels[d] = Level(i % n)
		i /= n
		if d == 0 {
			break
		}
	}
	return l
}

// stateIndex is the inverse of stateLabels.
func stateIndex(l Labels) int {
	i := 0
	for d := range Dim(NumDims) {
		i = i*(int(d.Max())+1) + int(l.Levels[d])
	}
	i <<= 3
	if l.Facts[OpenWorld] {
		i |= 4
	}
	if l.Facts[PureDeletion] {
		i |= 2
	}
	if l.Facts[ConfigurationObject] {
		i |= 1
	}
	return i
}

type sample struct {
	name string
	in   Input
}

// neutralSamples are the fixed parts of the calls the check enumerates: a
// shell running the repository's tests, a file write inside the
// workspace, and an MCP tool with nothing known about it.
func neutralSamples() []sample {
	return []sample{
		{"shell tool sample", Input{
			Call: &Call{Agent: "claude", Phase: PreTool, Cwd: "/work/repo", Workspaces: []string{"/work/repo"},
				Tool: "Bash", Input: map[string]any{"command": "go test ./...", "description": "run the tests"}},
			Key: "claude/Bash",
			Evidence: []Evidence{
				{Kind: KindRunsCode, Strength: Proven, Subject: "go test ./...", Detail: "go test builds and runs the repository's code", Effect: NoEffect},
				{Kind: KindPathInside, Strength: Proven, Subject: "/work/repo", Detail: "every path stays inside the workspace", Effect: Bound(Scope, 1)},
			},
		}},
		{"file tool sample", Input{
			Call: &Call{Agent: "claude", Phase: PreTool, Cwd: "/work/repo", Workspaces: []string{"/work/repo"},
				Tool: "Write", Input: map[string]any{"file_path": "/work/repo/main.go", "content": "package main\n"}},
			Key: "claude/Write",
			Evidence: []Evidence{
				{Kind: KindPathInside, Strength: Proven, Subject: "/work/repo/main.go", Detail: "the path stays inside the workspace", Effect: Bound(Scope, 0)},
			},
			Session: Session{Known: true, Tools: []string{"claude/Read"}},
		}},
		{"bare tool sample", Input{
			Call:    &Call{Agent: "codex", Phase: PreTool, Cwd: "/work/repo", Tool: "mcp__tracker__update"},
			Key:     "mcp/tracker/update",
			Session: Session{Known: true},
		}},
	}
}

// evidenceSample is the shell sample holding, proven and established,
// evidence of every kind the condition may name, so a grant that hides
// behind evidence the fixed samples lack is still enumerated.
func evidenceSample(kinds []string) sample {
	s := neutralSamples()[0]
	s.name = "sample with the evidence the rule names"
	s.in.Evidence = nil
	for _, k := range kinds {
		for _, st := range [...]Strength{Proven, Established} {
			s.in.Evidence = append(s.in.Evidence, Evidence{Kind: EvidenceKind(k), Strength: st, Subject: "/work/repo", Detail: "sample", Effect: NoEffect})
		}
	}
	return s
}

// commandSample is the shell sample proven to run exactly the program
// of a command pattern, so a grant behind command_is is enumerated.
func commandSample(pattern string) sample {
	s := neutralSamples()[0]
	s.name = "sample running " + pattern
	s.in.Call.Input = map[string]any{"command": pattern}
	s.in.Command = &ShellCommand{Argv: strings.Fields(pattern)}
	return s
}

// checkTighten reports, for each allow or sandbox rule that is not
// tighten-only, one witness pair.
func (c *compiler) checkTighten(list []*rule) {
	samples := neutralSamples()
	for _, r := range list {
		if r.Then != Allow && r.Then != Sandbox {
			continue
		}
		use := samples
		switch {
		case !r.sampleDep:
			// The condition reads only labels and facts: every sample
			// gives the same answers.
			use = samples[:1]
		default:
			if len(r.kinds) > 0 {
				use = append(use[:len(use):len(use)], evidenceSample(r.kinds))
			}
			for _, cmd := range r.commands {
				use = append(use[:len(use):len(use)], commandSample(cmd))
			}
		}
		for _, s := range use {
			if w, ok := tightenWitness(r, s.in); ok {
				c.add(r.whenLine, r.ID, "rule %q is not tighten-only: it would %s a call with %s but not the same call with %s (%s); a rule that lets calls run may only narrow, never grant because of risk (seed 001)",
					r.ID, r.Then, describeLabels(w.riskier), describeStep(w.riskier, w.safer), s.name)
				break
			}
		}
	}
}

type witness struct{ riskier, safer Labels }

// tightenWitness finds a call the rule matches whose one-step-safer
// neighbour it does not match.
func tightenWitness(r *rule, base Input) (witness, bool) {
	var match [numStates]bool
	// One activation serves every state: it points at l, which changes
	// in place; what it caches (the input map, the evidence list) does not
	// depend on the labels.
	var l Labels
	in := base
	in.Ceiling, in.Narrowed = &l, &l
	act := newActivation(&in)
	act.restrict(r.Then) // the rule lets calls run: it sees what Decide shows such rules
	for i := range numStates {
		l = stateLabels(i)
		act.call.full, act.ceiling.full = nil, nil // built from the old labels
		// Facts the condition cannot read do not change its answer:
		// reuse the answer for the same labels with those facts false,
		// which has a lower index.
		masked := l
		for f := range Fact(NumFacts) {
			if r.factMask&(1<<f) == 0 {
				masked.Facts[f] = false
			}
		}
		if j := stateIndex(masked); j != i {
			match[i] = match[j]
			continue
		}
		match[i] = r.matches(act)
	}
	for i := range numStates {
		if !match[i] {
			continue
		}
		hi := stateLabels(i)
		for d := range Dim(NumDims) {
			if hi.Levels[d] == 0 {
				continue
			}
			lo := hi.With(d, hi.Levels[d]-1)
			if !match[stateIndex(lo)] {
				return witness{hi, lo}, true
			}
		}
		for _, f := range [...]Fact{OpenWorld, PureDeletion} {
			if !hi.Facts[f] {
				continue
			}
			lo := hi
			lo.Facts[f] = false
			if !match[stateIndex(lo)] {
				return witness{hi, lo}, true
			}
		}
	}
	return witness{}, false
}

func describeLabels(l Labels) string {
	var b strings.Builder
	for d := range Dim(NumDims) {
		if d > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s", d, l.Value(d))
	}
	for f := range Fact(NumFacts) {
		if l.Facts[f] {
			fmt.Fprintf(&b, " +%s", f)
		}
	}
	return b.String()
}

// describeStep names what differs between the riskier and safer labels.
func describeStep(hi, lo Labels) string {
	for d := range Dim(NumDims) {
		if hi.Levels[d] != lo.Levels[d] {
			return fmt.Sprintf("%s=%s", d, lo.Value(d))
		}
	}
	for f := range Fact(NumFacts) {
		if hi.Facts[f] != lo.Facts[f] {
			return fmt.Sprintf("%s=%t", f, lo.Facts[f])
		}
	}
	return "the same labels"
}
