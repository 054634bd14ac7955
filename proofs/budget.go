package proofs

import (
	"strconv"
	"unicode/utf8"

	"github.com/narrowd/narrowd/rules"
)

// Bounds on the evidence of one call, so that an audit record stays
// under 64 KiB whatever the payload: a subject or detail quotes at most
// a few hundred bytes of the call, and a call keeps at most MaxEvidence
// records and MaxEvidenceBytes of their texts.
const (
	MaxEvidence      = 256
	MaxEvidenceBytes = 40 << 10
	maxSubjectBytes  = 256
	maxDetailBytes   = 512
	evidenceEllipsis = "…"
)

// Limit bounds ev in place and returns it. Texts are cut at a rune
// boundary with an ellipsis. A list over MaxEvidence records or
// MaxEvidenceBytes loses its tail, and then nothing in it may relax:
// what was cut may have raised a label, so the kept records' bounds and
// facts become records only, and one last record says how many were
// cut.
func Limit(ev []rules.Evidence) []rules.Evidence {
	keep, size := len(ev), 0
	for i := range ev {
		ev[i].Subject = clip(ev[i].Subject, maxSubjectBytes)
		ev[i].Detail = clip(ev[i].Detail, maxDetailBytes)
		size += len(ev[i].Kind) + len(ev[i].Subject) + len(ev[i].Detail) + len(ev[i].Effect)
		if keep == len(ev) && (i >= MaxEvidence-1 || size > MaxEvidenceBytes) {
			keep = i
		}
	}
	if keep == len(ev) {
		return ev
	}
	cut := len(ev) - keep
	ev = ev[:keep]
	for i := range ev {
		if ev[i].Strength.MayRelax() {
			ev[i].Effect = effectNone
		}
	}
	return append(ev, rules.Evidence{
		Kind:     rules.KindOverBudget,
		Strength: rules.Proven,
		Subject:  "evidence",
		Detail:   strconv.Itoa(cut) + " more pieces of evidence were not kept; the call keeps its ceiling",
		Effect:   effectNone,
	})
}

// clip cuts s to at most max bytes, at a rune boundary, marking the cut.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len(evidenceEllipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + evidenceEllipsis
}
