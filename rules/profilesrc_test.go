package rules

import (
	"errors"
	"strings"
	"testing"
)

func TestIndexSource(t *testing.T) {
	t.Parallel()
	src := "name = \"x\"  # comment\r\n" + // 1
		"\"sensitive\" = [\r\n" + // 2
		"  \"a]b\", # not a close\r\n" + // 3
		"  \"x = y\",\r\n" + // 4
		"]\r\n" + // 5
		"desc.sub = 1\r\n" + // 6
		"\r\n" + // 7
		"[[ rule ]]\r\n" + // 8
		"id = 'one'\r\n" + // 9
		"when = '''\r\n" + // 10
		"then = \"inside the string\"\r\n" + // 11
		"'''\r\n" + // 12
		"then = \"ask\"\r\n" + // 13
		"[rule.extra]\r\n" + // 14
		"[other]\r\n" + // 15
		"[[rule]]\r\n" + // 16
		"when = \"\"\"call.unlabelled\r\n" + // 17
		"  \"\"\"\r\n" + // 18
		"'quoted key' = 2\r\n" // 19
	idx := indexSource(src)
	tests := []struct {
		name      string
		got, want int
	}{
		{"top-name", idx.topLine("name"), 1},
		{"top-quoted", idx.topLine("sensitive"), 2},
		{"top-dotted", idx.topLine("desc"), 6},
		{"table", idx.topLine("other"), 15},
		{"in-array-not-key", idx.topLine("x"), 0},
		{"rules", len(idx.rules), 2},
		{"rule-1-header", idx.rule(0).line, 8},
		{"rule-1-id", idx.rule(0).keyLine("id"), 9},
		{"rule-1-when", idx.rule(0).keyLine("when"), 10},
		{"rule-1-then-not-from-string", idx.rule(0).keyLine("then"), 13},
		{"rule-1-subtable", idx.rule(0).keyLine("extra"), 14},
		{"rule-2-when", idx.rule(1).keyLine("when"), 17},
		{"rule-2-quoted", idx.rule(1).keyLine("quoted key"), 19},
		{"rule-2-missing-key-header", idx.rule(1).keyLine("reason"), 16},
		{"rule-3-absent", idx.rule(2).line, 0},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	if b := idx.rule(0); !b.whenMulti || !b.whenNextLine {
		t.Errorf("rule 1 when: multi %v next %v", b.whenMulti, b.whenNextLine)
	}
	if b := idx.rule(1); !b.whenMulti || b.whenNextLine {
		t.Errorf("rule 2 when: multi %v next %v", b.whenMulti, b.whenNextLine)
	}
}

// TestIndexSourceSpaceAfterQuotes: a multi-line `when` whose opening
// quotes are followed by spaces keeps its first line (" "), so the
// expression's line 2 is the next line of the file (found by
// FuzzLoadProfile: an error was placed past the file's end).
func TestIndexSourceSpaceAfterQuotes(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"[[rule]]\nwhen=''' \nA'''", "[[rule]]\nwhen = \"\"\"\t\r\nA\"\"\""} {
		if b := indexSource(src).rule(0); !b.whenMulti || b.whenNextLine {
			t.Errorf("%q: multi %v next %v, want a multi-line when whose first line is kept", src, b.whenMulti, b.whenNextLine)
		}
	}
	_, err := LoadProfile("p.toml", []byte("[[rule]]\nwhen=''' \nA'''"))
	pe, ok := errors.AsType[*ProfileError](err)
	if !ok {
		t.Fatalf("error %v, want a *ProfileError", err)
	}
	for _, pr := range pe.Problems {
		if strings.Contains(pr.Message, "when:") && pr.Line != 3 {
			t.Errorf("when's problem at line %d, want 3 (the A): %v", pr.Line, pr)
		}
	}
}
