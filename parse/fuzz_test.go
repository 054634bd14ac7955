package parse

import (
	"slices"
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
		// The only dynamic words a proven analysis may hold are safe
		// globs (never the command name, never able to become an
		// option, never climbing out with "..") and double-quoted
		// run-time words given to echo, which only prints them; paths
		// are literal or safe globs.
		checkGlob := func(w Word, what string) {
			switch {
			case w.Literal:
			case !w.Glob:
				t.Fatalf("Analyze(%q) is proven with dynamic %s %q", src, what, w.Value)
			case w.Value == "":
				t.Fatalf("Analyze(%q): empty glob", src)
			case strings.ContainsAny(w.Value[:1], "*?[") != w.GlobOption:
				t.Fatalf("Analyze(%q): glob %q GlobOption=%v", src, w.Value, w.GlobOption)
			case w.Value[0] == '-' && !strings.Contains(w.Value[:strings.IndexAny(w.Value, "*?[")], "="):
				t.Fatalf("Analyze(%q): glob %q could expand to an option", src, w.Value)
			case slices.Contains(strings.Split(w.Value, "/"), ".."):
				t.Fatalf("Analyze(%q): glob %q climbs with ..", src, w.Value)
			}
		}
		for _, p := range a.Programs {
			for i, w := range p.Argv {
				if i == 0 && !w.Literal {
					t.Fatalf("Analyze(%q) is proven with dynamic command name %q", src, w.Value)
				}
				if w.Quoted && !w.Literal && !w.Glob {
					// A double-quoted run-time word: one operand of a
					// command that only prints it.
					if p.Name != "echo" || i == 0 {
						t.Fatalf("Analyze(%q) is proven with quoted dynamic word %q in %s", src, w.Value, p.Name)
					}
					continue
				}
				checkGlob(w, "word")
			}
			for _, pa := range p.Paths {
				checkGlob(pa.Word, "path")
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
