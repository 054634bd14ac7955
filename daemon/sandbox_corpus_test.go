package daemon

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/narrowd/narrowd/rules"
)

// TestCorpusSandbox runs the command corpus through an engine whose
// daemon issues sandbox tickets, as a serving daemon re-decides an asked
// shell call as it would run in narrowd's sandbox. Nothing the corpus
// calls dangerous may be allowed outright, the sandbox outcome may only
// replace an ask, and the build and test runners are counted (go test -v
// -run CorpusSandbox ./daemon).
func TestCorpusSandbox(t *testing.T) {
	entries := corpusEntries(t)
	e, err := NewEngine(EngineConfig{Sandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	type count struct{ total, sandbox, allow int }
	counts := map[string]*count{}
	var asking []string
	for _, en := range entries {
		call := rules.Call{Agent: "claude", Event: "PreToolUse", Phase: rules.PreTool, Tool: "Bash",
			Cwd: ws, Workspaces: []string{ws}, Input: map[string]any{"command": en.Command}}
		// A session that read a file: what almost every coding session is.
		sess := rules.Session{Known: true, Called: map[string]bool{"reads_untrusted": true}}
		v := e.Judge(call, sess)
		sv := e.sandboxed(call, sess, v)
		if sv.Decision.Outcome != v.Decision.Outcome && v.Decision.Outcome != rules.Ask {
			t.Errorf("%s %q: the sandbox replaced %s, not an ask", en.ID, en.Command, v.Decision.Outcome)
		}
		if en.Expect == "dangerous" && sv.Decision.Outcome == rules.Allow {
			t.Errorf("%s %q: dangerous command allowed", en.ID, en.Command)
		}
		key := en.Expect
		if en.Expect == "runs-code" {
			key += "/" + en.Category
		}
		c := counts[key]
		if c == nil {
			c = &count{}
			counts[key] = c
		}
		c.total++
		switch sv.Decision.Outcome {
		case rules.Sandbox:
			c.sandbox++
		case rules.Allow:
			c.allow++
		}
		if en.Expect == "runs-code" && sv.Decision.Outcome != rules.Sandbox {
			asking = append(asking, en.Command)
		}
		if en.Expect == "dangerous" && sv.Decision.Outcome == rules.Sandbox {
			// It runs only where it cannot reach the network or write
			// outside the workspace.
			t.Logf("dangerous, sent to the sandbox: %s %q", en.Category, en.Command)
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var runs, runsSandboxed int
	for _, k := range keys {
		c := counts[k]
		t.Logf("%-34s %4d: sandbox %4d, allow %4d", k, c.total, c.sandbox, c.allow)
		if filepath.Dir(k) == "runs-code" {
			runs += c.total
			runsSandboxed += c.sandbox
		}
	}
	t.Logf("build and test runners sent to the sandbox: %d of %d; still asked: %q", runsSandboxed, runs, asking)
	if runsSandboxed == 0 {
		t.Error("no build or test runner goes to the sandbox")
	}
}
