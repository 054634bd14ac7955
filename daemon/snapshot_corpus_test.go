package daemon

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/rules"
	"github.com/narrowd/narrowd/sandbox/snapshot"
)

// seedWorkspace makes every literal relative path a command names exist
// as a small regular file, except what the command creates (mkdir) and
// paths written as directories (build/): the corpus's commands then meet
// the files they expect, as in a real repository.
func seedWorkspace(t *testing.T, ws string, a *parse.Analysis) {
	t.Helper()
	for _, p := range a.Programs {
		for _, pa := range p.Paths {
			v := pa.Word.Value
			if !pa.Word.Literal || pa.Word.Glob || pa.Access == parse.Create || v == "" || v == "." ||
				filepath.IsAbs(v) || strings.HasSuffix(v, "/") || !filepath.IsLocal(v) || strings.ContainsAny(v, "~$") {
				continue
			}
			full := filepath.Join(ws, v)
			if _, err := os.Lstat(full); err == nil {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				continue // a file already stands where a directory would
			}
			if err := os.WriteFile(full, []byte("content of "+v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCorpusWithSnapshots runs the command corpus through an engine with
// a real snapshot store, each command in a workspace that holds the
// files it names, beside an engine with none (check, the shim's
// fallback). Nothing dangerous, networked or code-running may be allowed
// with the store, and every call the store newly lets run holds exactly
// one snapshot. It logs how many workspace writes each allows (go test
// -v -run CorpusWithSnapshots ./daemon).
func TestCorpusWithSnapshots(t *testing.T) {
	entries := corpusEntries(t)
	base := t.TempDir()
	store, err := snapshot.Open(filepath.Join(base, "state", "snapshots"), snapshot.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	with, err := NewEngine(EngineConfig{Snapshots: store})
	if err != nil {
		t.Fatal(err)
	}
	without, err := NewEngine(EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := parse.DefaultKnowledge()
	if err != nil {
		t.Fatal(err)
	}
	type count struct{ total, with, without, held int }
	counts := map[string]*count{}
	var newly []string
	for _, e := range entries {
		ws := filepath.Join(base, "ws", e.ID)
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		seedWorkspace(t, ws, parse.Analyze(e.Command, k))
		call := rules.Call{
			Agent: "claude", Event: "PermissionRequest", Phase: rules.PermissionAsk, Tool: "Bash",
			Cwd: ws, Workspaces: []string{ws}, Input: map[string]any{"command": e.Command},
		}
		v := with.JudgeAs(snapshot.NewID(), call, rules.Session{})
		nv := without.Judge(call, rules.Session{})
		c := counts[e.Expect]
		if c == nil {
			c = &count{}
			counts[e.Expect] = c
		}
		c.total++
		allowed, allowedBefore := v.Decision.Outcome == rules.Allow, nv.Decision.Outcome == rules.Allow
		if allowed {
			c.with++
		}
		if allowedBefore {
			c.without++
		}
		if snapshotCount(v) > 0 {
			c.held++
		}
		switch {
		case allowed && (e.Expect == "dangerous" || e.Expect == "network" || e.Expect == "runs-code"):
			t.Errorf("%s %q (%s) allowed with a snapshot store by %s", e.ID, e.Command, e.Expect, v.Decision.Rule)
		case allowedBefore && !allowed:
			t.Errorf("%s %q: the store turned an allow into %s", e.ID, e.Command, v.Decision.Outcome)
		case allowed && !allowedBefore:
			if n := snapshotCount(v); n != 1 {
				t.Errorf("%s %q newly allowed with %d snapshot records", e.ID, e.Command, n)
			}
			newly = append(newly, e.ID+" "+e.Command)
		}
	}
	classes := make([]string, 0, len(counts))
	for k := range counts {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	for _, k := range classes {
		c := counts[k]
		t.Logf("%-16s allowed %3d of %4d with a snapshot store, %3d without; a snapshot held for %d", k, c.with, c.total, c.without, c.held)
	}
	for _, n := range newly {
		t.Logf("newly allowed: %s", n)
	}
	if counts["workspace-write"] == nil || counts["workspace-write"].with <= counts["workspace-write"].without {
		t.Error("the snapshot store lets no more workspace writes run")
	}
}

// corpusEntry is one line of the shared command corpus.
type corpusEntry struct{ ID, Command, Expect, Category string }

// corpusEntries reads testdata/corpus/commands.jsonl whole.
func corpusEntries(t *testing.T) []corpusEntry {
	t.Helper()
	f, err := os.Open("../testdata/corpus/commands.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var entries []corpusEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e corpusEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(entries) < 600 {
		t.Fatalf("corpus has %d entries", len(entries))
	}
	return entries
}
