package e2e

// Harness helpers the Codex and Gemini tests add: config edits, the
// evidence of one audited call, and assertions shared by both clients.

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// AppendConfig appends TOML to the world's narrowd config file, which the
// daemon and the shim's in-process fallback both read. Call it before
// Start.
func (w *World) AppendConfig(toml string) {
	w.t.Helper()
	path := filepath.Join(w.ConfigHome, "narrowd", "config.toml")
	w.WriteFile(path, readFile(path)+toml)
}

// Evidence returns the verdict evidence of the first audit record for one
// tool call, as JSON text ("" when there is none).
func (w *World) Evidence(toolUseID string) string {
	w.t.Helper()
	f, err := os.Open(filepath.Join(w.AuditDir, "audit.jsonl"))
	if err != nil {
		w.t.Errorf("audit log: %v", err)
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r struct {
			ToolUseID string `json:"tool_use_id"`
			Verdict   struct {
				Evidence json.RawMessage `json:"evidence"`
			} `json:"verdict"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.ToolUseID == toolUseID {
			return string(r.Verdict.Evidence)
		}
	}
	return ""
}

// wantAudit checks the daemon's audit records for one tool call: the
// first record is for event with outcome, and (when answer is not empty)
// that answer. It returns the records.
func wantAudit(t *testing.T, w *World, toolUseID, event, outcome, answer string) []AuditRecord {
	t.Helper()
	recs := w.AuditFor(toolUseID)
	if len(recs) == 0 {
		t.Errorf("no audit record for %s", toolUseID)
		return nil
	}
	r := recs[0]
	if r.Event != event || r.Outcome != outcome || answer != "" && r.Answer != answer {
		t.Errorf("audit for %s = event %s outcome %s answer %s (rule %s), want %s %s %s",
			toolUseID, r.Event, r.Outcome, r.Answer, r.PolicyRule, event, outcome, answer)
	}
	return recs
}

// noLeak fails if any request the client sent the model holds secret.
func noLeak(t *testing.T, m *FakeModel, secret string) {
	t.Helper()
	for _, r := range m.Requests("") {
		if strings.Contains(string(r.Body), secret) {
			t.Errorf("a request to the model (%s, turn %d) carries %q", r.Path, r.Turn, secret)
		}
	}
}

// readFile returns a file's content, "" when it cannot be read.
func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
