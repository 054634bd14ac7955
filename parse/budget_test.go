package parse

import (
	"errors"
	"strings"
	"testing"
)

// TestBudget checks each limit of the analysis budget at its edge: just
// under it the text is parsed, just over it Parse returns an error that
// errors.Is ErrBudget, so the call keeps its ceiling.
func TestBudget(t *testing.T) {
	rep := strings.Repeat
	k, err := DefaultKnowledge()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		under, over string
	}{
		{"bytes", "echo " + rep("a", MaxScriptBytes-5), "echo " + rep("a", MaxScriptBytes-4)},
		{"nesters", rep("$((1))", MaxNesters/3), rep("$((1))", MaxNesters/3) + "$$$"},
		{"quoted nesters", "echo '" + rep("(", MaxNesters) + "'", "echo '" + rep("(", MaxNesters+1) + "'"},
		{"statements", "echo '" + rep(";", MaxStatements) + "'", "echo '" + rep(";", MaxStatements+1) + "'"},
		{"commands", rep("a\n", MaxCommands), rep("a\n", MaxCommands+1)},
		{"words", rep("a b\n", MaxWords/2), rep("a b\n", MaxWords/2) + "c"},
		{"depth", rep("(", MaxDepth/3) + "a" + rep(")", MaxDepth/3), rep("(", MaxDepth) + "a" + rep(")", MaxDepth)},
	} {
		if _, err := Parse(c.under); err != nil {
			t.Errorf("%s: under the budget: %v", c.name, err)
		}
		_, err := Parse(c.over)
		if !errors.Is(err, ErrBudget) {
			t.Errorf("%s: over the budget: got %v, want a budget error", c.name, err)
		}
		if a := Analyze(c.over, k); a.Err == nil || a.Proven() {
			t.Errorf("%s: Analyze of text over the budget proved it", c.name)
		}
	}
	var pe *Error
	if _, err := Parse("a |"); err == nil || errors.Is(err, ErrBudget) || !errors.As(err, &pe) {
		t.Errorf("a syntax error is not a budget error: %v", err)
	}
}
