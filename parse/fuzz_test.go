package parse

import (
	"strings"
	"testing"
)

// inside reports whether p is a position within src: a line that exists
// and a column at most one past its end.
func inside(src string, p Pos) bool {
	lines := strings.Split(src, "\n")
	if p.Line < 1 || p.Line > len(lines) {
		return false
	}
	return p.Col >= 1 && p.Col <= len(lines[p.Line-1])+1
}

// checkAnalysis asserts the properties every analysis has.
func checkAnalysis(t *testing.T, src string, a *Analysis) {
	t.Helper()
	if a.Err != nil {
		if a.Proven() {
			t.Fatalf("Analyze(%q) has an error and is proven", src)
		}
		if pe, ok := a.Err.(*Error); !ok || !inside(src, pe.Pos) {
			t.Fatalf("Analyze(%q).Err = %#v, want *Error inside the text", src, a.Err)
		}
		return
	}
	for _, p := range a.Programs {
		if !inside(src, p.Pos) {
			t.Fatalf("Analyze(%q): program %s at %v outside the text", src, p.Name, p.Pos)
		}
		for _, w := range p.Argv {
			if !inside(src, w.Pos) {
				t.Fatalf("Analyze(%q): word %q at %v outside the text", src, w.Value, w.Pos)
			}
			if w.Literal == (w.Why != "") {
				t.Fatalf("Analyze(%q): word %q Literal=%v Why=%q", src, w.Value, w.Literal, w.Why)
			}
		}
		for _, pa := range p.Paths {
			if !inside(src, pa.Word.Pos) {
				t.Fatalf("Analyze(%q): path %q at %v outside the text", src, pa.Word.Value, pa.Word.Pos)
			}
		}
	}
	if a.Proven() {
		for _, p := range a.Programs {
			for _, w := range p.Argv {
				if !w.Literal {
					t.Fatalf("Analyze(%q) is proven with dynamic word %q", src, w.Value)
				}
			}
			for _, pa := range p.Paths {
				if !pa.Word.Literal {
					t.Fatalf("Analyze(%q) is proven with dynamic path %q", src, pa.Word.Value)
				}
			}
		}
	}
	for _, u := range a.Unproven {
		if !inside(src, u.Pos) {
			t.Fatalf("Analyze(%q): unproven %q at %v outside the text", src, u.Why, u.Pos)
		}
		if u.Why == "" {
			t.Fatalf("Analyze(%q): unproven at %v without a reason", src, u.Pos)
		}
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, src := range allInputs() {
		f.Add(src)
	}
	k := syntaxKnowledge(f)
	f.Fuzz(func(t *testing.T, src string) {
		checkAnalysis(t, src, Analyze(src, k))
	})
}

// TestAnalyzeProperties runs the fuzz properties over the tables.
func TestAnalyzeProperties(t *testing.T) {
	t.Parallel()
	k := syntaxKnowledge(t)
	for _, src := range allInputs() {
		checkAnalysis(t, src, Analyze(src, k))
	}
}
