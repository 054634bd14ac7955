package proofs

import (
	"strings"
	"testing"

	"github.com/narrowd/narrowd/rules"
)

func TestLimitEvidence(t *testing.T) {
	long := strings.Repeat("é", 1000)
	ev := Limit([]rules.Evidence{{Kind: "unproven", Strength: rules.Proven, Subject: long, Detail: long, Effect: effectNone}})
	if len(ev[0].Subject) > maxSubjectBytes || len(ev[0].Detail) > maxDetailBytes || !strings.HasSuffix(ev[0].Detail, evidenceEllipsis) {
		t.Errorf("texts not clipped: %d, %d bytes", len(ev[0].Subject), len(ev[0].Detail))
	}
	if !strings.HasPrefix(ev[0].Subject, "é") || strings.ContainsRune(ev[0].Subject, '\uFFFD') {
		t.Errorf("clipped inside a rune: %q", ev[0].Subject[:8])
	}

	// Over the count: nothing kept may relax, and the last record says
	// how many were cut.
	var many []rules.Evidence
	for range MaxEvidence + 10 {
		many = append(many, rules.Evidence{Kind: "label-bound", Strength: rules.Proven, Subject: "mutation", Effect: bound(rules.Mutation, 0)})
	}
	ceiling := rules.Labels{}
	for _, d := range rules.Dims() {
		ceiling.Levels[d] = d.Max()
	}
	got := Limit(many)
	if len(got) != MaxEvidence {
		t.Fatalf("kept %d records, want %d", len(got), MaxEvidence)
	}
	if last := got[len(got)-1]; last.Kind != "over-budget" || !strings.Contains(last.Detail, "11 more") {
		t.Errorf("last record %+v", last)
	}
	if n := Narrow(ceiling, got); n != ceiling {
		t.Errorf("cut evidence still narrowed: %v", n)
	}

	// Over the bytes: the same.
	var big []rules.Evidence
	for range 200 {
		big = append(big, rules.Evidence{Kind: "label-bound", Strength: rules.Proven, Detail: long, Effect: bound(rules.Mutation, 0)})
	}
	if got := Limit(big); len(got) >= 200 || Narrow(ceiling, got) != ceiling {
		t.Errorf("byte budget: kept %d of 200, narrowed %v", len(got), Narrow(ceiling, got))
	}
	// Within both, nothing changes.
	few := Limit([]rules.Evidence{many[0], {Kind: "label-bound", Strength: rules.Proven, Effect: bound(rules.Mutation, 0)}})
	if len(few) != 2 || few[1].Effect != bound(rules.Mutation, 0) {
		t.Errorf("short list changed: %+v", few)
	}
}
