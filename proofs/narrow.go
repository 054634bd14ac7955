package proofs

import (
	"github.com/narrowd/narrowd/rules"
)

// Effects of evidence are [rules.Effect] values (a bound, a fact proven
// false, a raise, or none); the narrowed labels follow from the evidence
// alone: [Narrow] reads nothing else.
const effectNone = rules.NoEffect

func bound(d rules.Dim, v rules.Level) rules.Effect { return rules.Bound(d, v) }

func raise(d rules.Dim) rules.Effect { return rules.Raise(d) }

// factIs is the effect of proving fact f has value v; only false narrows,
// so a true value is recorded only.
func factIs(f rules.Fact, v bool) rules.Effect {
	if !v {
		return rules.FactFalse(f)
	}
	return rules.NoEffect
}

// Narrow applies evidence to a ceiling: only downward, and only on proven
// or established evidence (spec §5 rules 1, 2 and 4). A raise holds a
// label at its ceiling whatever else was proven. A fact may only move
// from its risky value (true) to false, never the other way.
func Narrow(ceiling rules.Labels, evidence []rules.Evidence) rules.Labels {
	n := ceiling
	var raised [rules.NumDims]bool
	for _, e := range evidence {
		if d, ok := e.Effect.Raised(); ok {
			// Any strength may raise.
			raised[d] = true
			continue
		}
		if !e.Strength.MayRelax() {
			continue
		}
		if f, ok := e.Effect.FactFalse(); ok {
			n.Facts[f] = false
		} else if d, v, ok := e.Effect.Bound(); ok {
			n.Levels[d] = min(n.Levels[d], v)
		}
	}
	all := true
	for d := range rules.Dim(rules.NumDims) {
		if raised[d] {
			n.Levels[d] = ceiling.Levels[d]
		} else {
			all = false
		}
	}
	if all {
		// Every label is back at the tool's ceiling (a git call whose
		// repository is not ordinary): open_world=false, which says no
		// label comes from a domain ceiling, cannot hold. Kept false,
		// such a git log looked like a call that moves money.
		n.Facts[rules.OpenWorld] = ceiling.Facts[rules.OpenWorld]
	}
	return n
}

// claims collects evidence for one call in a stable order.
type claims struct {
	ev []rules.Evidence
}

func (c *claims) add(kind rules.EvidenceKind, s rules.Strength, subject, detail string, effect rules.Effect) {
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
		c.add(rules.KindLabelBound, rules.Proven, d.String(), why[d], bound(d, l.Get(d)))
	}
	for _, f := range facts {
		c.add(rules.KindFactBound, rules.Proven, f.String(), "every part of the call is proven; no part is labelled from a domain ceiling", factIs(f, false))
	}
}
