package proofs

import (
	"strconv"
	"strings"

	"github.com/narrowd/narrowd/rules"
)

// Effects of evidence, as written in [rules.Evidence.Effect]:
//
//	mutation<=read         a proven upper bound on one label
//	fact:open_world=false  a proven value of one fact
//	raise:scope            hold the label at its ceiling
//	none                   recorded only
//
// The narrowed labels follow from the evidence alone: [Narrow] reads
// nothing else.
const effectNone = "none"

func bound(d rules.Dim, v rules.Level) string {
	if d < rules.NumDims && int(v) < len(boundTexts[d]) {
		return boundTexts[d][v]
	}
	return d.String() + "<=" + d.Name(v)
}

// boundTexts and factFalseTexts are the effect texts of every label
// bound and of every fact proven false, built once: a proven call's
// evidence carries one per label and fact, and building them per call
// was a string allocation each.
var (
	boundTexts = func() (t [rules.NumDims][]string) {
		for _, d := range rules.Dims() {
			for v := range d.Values() {
				t[d] = append(t[d], d.String()+"<="+d.Name(rules.Level(v)))
			}
		}
		return t
	}()
	factFalseTexts = func() (t [rules.NumFacts]string) {
		for f := range rules.Fact(rules.NumFacts) {
			t[f] = "fact:" + f.String() + "=false"
		}
		return t
	}()
)

func raise(d rules.Dim) string { return "raise:" + d.String() }

func factIs(f rules.Fact, v bool) string {
	if !v && f < rules.NumFacts {
		return factFalseTexts[f]
	}
	return "fact:" + f.String() + "=" + strconv.FormatBool(v)
}

// Narrow applies evidence to a ceiling: only downward, and only on proven
// or established evidence (spec §5 rules 1, 2 and 4). A raise holds a
// label at its ceiling whatever else was proven. A fact may only move
// from its risky value (true) to false, never the other way.
func Narrow(ceiling rules.Labels, evidence []rules.Evidence) rules.Labels {
	n := ceiling
	var raised [rules.NumDims]bool
	for _, e := range evidence {
		switch {
		case strings.HasPrefix(e.Effect, "raise:"):
			// Any strength may raise.
			if d, err := rules.ParseDim(strings.TrimPrefix(e.Effect, "raise:")); err == nil {
				raised[d] = true
			}
		case !e.Strength.MayRelax():
			continue
		case strings.HasPrefix(e.Effect, "fact:"):
			name, val, ok := strings.Cut(strings.TrimPrefix(e.Effect, "fact:"), "=")
			f, err := rules.ParseFact(name)
			if ok && err == nil && val == "false" {
				n.Facts[f] = false
			}
		case strings.Contains(e.Effect, "<="):
			name, val, _ := strings.Cut(e.Effect, "<=")
			d, err := rules.ParseDim(name)
			if err != nil {
				continue
			}
			v, err := d.Parse(val)
			if err != nil {
				continue
			}
			n.Levels[d] = min(n.Levels[d], v)
		}
	}
	for d := range rules.Dim(rules.NumDims) {
		if raised[d] {
			n.Levels[d] = ceiling.Levels[d]
		}
	}
	return n
}

// claims collects evidence for one call in a stable order.
type claims struct {
	ev []rules.Evidence
}

func (c *claims) add(kind string, s rules.Strength, subject, detail, effect string) {
	if c.ev == nil {
		// A proven shell call carries a dozen pieces (six label
		// bounds, facts, paths): one allocation instead of five
		// doublings.
		c.ev = make([]rules.Evidence, 0, 16)
	}
	c.ev = append(c.ev, rules.Evidence{Kind: kind, Strength: s, Subject: subject, Detail: detail, Effect: effect})
}

// bounds emits one proven bound per label and the proven facts of a
// joined label set: the riskiest part decides each label.
func (c *claims) bounds(l rules.Labels, why [rules.NumDims]string, facts []rules.Fact) {
	for _, d := range rules.Dims() {
		c.add("label-bound", rules.Proven, d.String(), why[d], bound(d, l.Get(d)))
	}
	for _, f := range facts {
		c.add("fact-bound", rules.Proven, f.String(), "every part of the call is proven; no part is labelled from a domain ceiling", factIs(f, false))
	}
}
