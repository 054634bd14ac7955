package proofs_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/daemon"
	"github.com/narrowd/narrowd/rules"
)

// update rewrites golden files: go test ./proofs -run Corpus -u
var update = flag.Bool("u", false, "update golden files")

const (
	corpusFile   = "../testdata/corpus/commands.jsonl"
	corpusGolden = "testdata/corpus.golden.jsonl"
	corpusRoot   = "/home/dev/project"
)

// corpusEntry is one line of the shared command corpus.
type corpusEntry struct {
	ID           string `json:"id"`
	Command      string `json:"command"`
	Expect       string `json:"expect"`
	Category     string `json:"category"`
	ClaudeAllows *bool  `json:"claude_allows"`
}

func loadCorpus(t testing.TB) []corpusEntry {
	t.Helper()
	f, err := os.Open(corpusFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e corpusEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("corpus line %d: %v", len(out)+1, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 600 {
		t.Fatalf("corpus has %d entries, want at least 600", len(out))
	}
	return out
}

// corpusCall is the Claude Code Bash call an agent working in the corpus
// workspace would send.
func corpusCall(cmd string) rules.Call {
	return rules.Call{
		Agent: "claude", Event: "PreToolUse", Phase: rules.PreTool, Tool: "Bash",
		Cwd: corpusRoot, Workspaces: []string{corpusRoot},
		Input: map[string]any{"command": cmd},
	}
}

func corpusEngine(t testing.TB) *daemon.Engine {
	t.Helper()
	// The corpus workspace does not exist on this machine: lexical
	// proofs only, so the goldens do not depend on the disk.
	eng, err := daemon.NewEngine(daemon.EngineConfig{NoDisk: true})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

type corpusResult struct {
	ID       string `json:"id"`
	Narrowed string `json:"narrowed"`
	Outcome  string `json:"outcome"`
	Rule     string `json:"rule"`
}

// TestCorpusGolden pins the narrowed labels and standard-profile outcome
// of every corpus command. Review the diff after go test ./proofs -u.
func TestCorpusGolden(t *testing.T) {
	entries := loadCorpus(t)
	eng := corpusEngine(t)
	var got bytes.Buffer
	for _, e := range entries {
		v := eng.Judge(corpusCall(e.Command), rules.Session{})
		r := corpusResult{ID: e.ID, Narrowed: v.Narrowed.String(), Outcome: v.Decision.Outcome.String(), Rule: v.Decision.Rule}
		b, _ := json.Marshal(r)
		got.Write(b)
		got.WriteByte('\n')
	}
	if *update {
		if err := os.WriteFile(corpusGolden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(corpusGolden)
	if err != nil {
		t.Fatalf("%v (run go test ./proofs -run CorpusGolden -u)", err)
	}
	gl, wl := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
	diffs := 0
	for i := 0; i < max(len(gl), len(wl)) && diffs < 20; i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			diffs++
			t.Errorf("line %d:\n got  %s\n want %s", i+1, g, w)
		}
	}
}

// TestCorpusNeverWrong is the safety property: no dangerous command is
// allowed, no write narrows to a read, no network command narrows its
// egress to none, and no code runner narrows at all.
func TestCorpusNeverWrong(t *testing.T) {
	entries := loadCorpus(t)
	eng := corpusEngine(t)
	byClass := map[string][2]int{}
	claudeAllowed, bothAllowed := 0, 0
	for _, e := range entries {
		v := eng.Judge(corpusCall(e.Command), rules.Session{})
		n := v.Narrowed
		var wrong string
		switch e.Expect {
		case "dangerous":
			if v.Decision.Outcome == rules.Allow {
				wrong = "dangerous command allowed"
			}
		case "workspace-write":
			if n.Get(rules.Mutation) == 0 {
				wrong = "a write narrowed to mutation read"
			}
		case "network":
			if n.Get(rules.Egress) == 0 {
				wrong = "a network command narrowed to egress none"
			}
		case "runs-code":
			if *n != *v.Ceiling {
				wrong = "a code runner narrowed below its ceiling"
			}
		}
		if wrong != "" {
			t.Errorf("%s %q: %s (narrowed %v, %s by %s)", e.ID, e.Command, wrong, n, v.Decision.Outcome, v.Decision.Rule)
		}
		c := byClass[e.Expect]
		c[1]++
		if v.Decision.Outcome == rules.Allow {
			c[0]++
		}
		byClass[e.Expect] = c
		if e.Expect == "harmless" && e.ClaudeAllows != nil && *e.ClaudeAllows {
			claudeAllowed++
			if v.Decision.Outcome == rules.Allow {
				bothAllowed++
			}
		}
	}
	classes := make([]string, 0, len(byClass))
	for k := range byClass {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	for _, k := range classes {
		c := byClass[k]
		t.Logf("%-16s allowed %4d of %4d (%.1f %%)", k, c[0], c[1], 100*float64(c[0])/float64(c[1]))
	}
	t.Logf("harmless that Claude Code's own rules allow: narrowd allows %d of %d", bothAllowed, claudeAllowed)
}

// TestCorpusNotAllowedHarmless lists the harmless commands the standard
// profile still asks about, for people improving the table (go test -v).
func TestCorpusNotAllowedHarmless(t *testing.T) {
	if !testing.Verbose() {
		t.Skip("a listing for people; run with -v")
	}
	entries := loadCorpus(t)
	eng := corpusEngine(t)
	for _, e := range entries {
		if e.Expect != "harmless" {
			continue
		}
		v := eng.Judge(corpusCall(e.Command), rules.Session{})
		if v.Decision.Outcome != rules.Allow {
			var why []string
			for _, ev := range v.Evidence {
				switch ev.Kind {
				case "unproven", "unknown-command", "parse-error", "runs-code", "path-outside", "sensitive-name", "privileged":
					why = append(why, fmt.Sprintf("%s(%s)", ev.Kind, ev.Subject))
				}
			}
			t.Logf("%s %-50q %s %s", e.ID, e.Command, v.Decision.Rule, strings.Join(why, " "))
		}
	}
}
