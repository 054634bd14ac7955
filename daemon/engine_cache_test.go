package daemon

import (
	"reflect"
	"testing"

	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/rules"
)

// TestJudgingLeavesAnalysesAlone: the engine shares cached analyses
// between calls, so judging must never modify one. Every corpus command
// is judged twice, as its own call and with write targets, and its
// cached analysis must still equal a fresh one, and the two verdicts
// each other.
func TestJudgingLeavesAnalysesAlone(t *testing.T) {
	t.Parallel()
	e, err := NewEngine(EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := parse.DefaultKnowledge()
	if err != nil {
		t.Fatal(err)
	}
	spec := rules.InputSpec{Kind: rules.InputShell, Field: "command"}
	for _, call := range corpusCalls(t) {
		cmd, _ := call.Input["command"].(string)
		first := e.Judge(call, rules.Session{})
		e.evidence(spec, call, false, true)
		second := e.Judge(call, rules.Session{})
		if !reflect.DeepEqual(e.analyses.Analyze(cmd), parse.Analyze(cmd, k)) {
			t.Fatalf("%q: judging changed the cached analysis", cmd)
		}
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("%q: judged twice, two verdicts:\n%+v\n%+v", cmd, first, second)
		}
	}
}
