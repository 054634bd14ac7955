package e2e

// Harness helpers the Codex and Gemini tests add: config edits, the
// evidence of one audited call, and assertions shared by both clients.

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// checkAgentMetrics scrapes the daemon's /metrics over HTTP and checks the
// agent's counters against the audit log, one record per answered hook
// call:
// narrowd_decisions_total{agent,tool,outcome} counts exactly the records'
// answers by tool, narrowd_prompts_avoided_total and
// narrowd_prompts_avoided_estimate_total exactly the records marked so.
// calls is how many pre-tool calls the scenario made; the records must
// number the same. It returns the audit records it counted.
func checkAgentMetrics(t *testing.T, w *World, agentName string, calls int) []AuditRecord {
	t.Helper()
	type key struct{ tool, outcome string }
	want, wantAvoided, wantEstimate := map[key]float64{}, map[string]float64{}, map[string]float64{}
	var recs []AuditRecord
	for _, r := range w.Audit() {
		if r.Agent != agentName || r.Answer == "exec" || r.Answer == "exec-refused" {
			// narrowd exec's records are not hook answers.
			continue
		}
		recs = append(recs, r)
		want[key{r.ToolName, r.Answer}]++
		if r.PromptAvoided {
			wantAvoided[r.ToolName]++
		}
		if r.PromptAvoidedEstimate {
			wantEstimate[r.ToolName]++
		}
	}
	if len(recs) != calls {
		t.Errorf("%s: %d audit records, want one for each of the %d calls", agentName, len(recs), calls)
	}
	got, gotAvoided, gotEstimate := map[key]float64{}, map[string]float64{}, map[string]float64{}
	for _, s := range ParseMetrics(w.MetricsText()) {
		if s.Labels["agent"] != agentName {
			continue
		}
		switch s.Name {
		case "narrowd_decisions_total":
			got[key{s.Labels["tool"], s.Labels["outcome"]}] += s.Value
		case "narrowd_prompts_avoided_total":
			gotAvoided[s.Labels["tool"]] += s.Value
		case "narrowd_prompts_avoided_estimate_total":
			gotEstimate[s.Labels["tool"]] += s.Value
		}
	}
	same := func(name string, want, got map[string]float64) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s{agent=%q,tool=%q} = %v, want %v", name, agentName, k, got[k], v)
			}
		}
		for k, v := range got {
			if want[k] != v {
				t.Errorf("%s{agent=%q,tool=%q} = %v, want %v", name, agentName, k, v, want[k])
			}
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("narrowd_decisions_total{agent=%q,tool=%q,outcome=%q} = %v, want %v", agentName, k.tool, k.outcome, got[k], v)
		}
	}
	for k, v := range got {
		if want[k] != v {
			t.Errorf("narrowd_decisions_total{agent=%q,tool=%q,outcome=%q} = %v, want %v", agentName, k.tool, k.outcome, v, want[k])
		}
	}
	same("narrowd_prompts_avoided_total", wantAvoided, gotAvoided)
	same("narrowd_prompts_avoided_estimate_total", wantEstimate, gotEstimate)
	return recs
}

// writeSandboxProbe puts a Makefile in the project whose build writes a
// workspace file, tries a file outside the workspace and tries the
// loopback sink it returns: what narrowd's sandbox must allow and refuse.
func writeSandboxProbe(t *testing.T, w *World) *Sink {
	t.Helper()
	sink := NewSink(t, "reached\n")
	w.WriteFile(filepath.Join(w.Project, "Makefile"), "all:\n"+
		"\techo built > built.txt\n"+
		"\t-echo escaped > "+filepath.Join(w.Outside, "escaped.txt")+"\n"+
		"\tcurl -s -m 5 "+sink.URL+"/from-make || echo NO-NETWORK\n")
	return sink
}

// checkSandboxProbe checks what the sandboxed build did, on disk, at the
// sink and in the tool result the client sent back to the model.
func checkSandboxProbe(t *testing.T, w *World, sink *Sink, res ToolResult) {
	t.Helper()
	mustExist(t, filepath.Join(w.Project, "built.txt"), "built\n")
	mustNotExist(t, filepath.Join(w.Outside, "escaped.txt"))
	if hits := sink.Hits(); len(hits) != 0 {
		t.Errorf("the sandboxed build reached the loopback sink: %v", hits)
	}
	if !strings.Contains(res.Text, "NO-NETWORK") {
		t.Errorf("tool result = %+v, want the build's output with its failed connection", res)
	}
	var execs int
	for _, r := range w.Audit() {
		if r.Answer == "exec" && r.Outcome == "allow" {
			execs++
		}
	}
	if execs != 1 {
		t.Errorf("%d audit records of a released sandbox ticket, want 1", execs)
	}
}

// Signal sends sig to the running narrowd serve (SIGSTOP makes a daemon
// that accepts connections and answers nothing; SIGCONT resumes it).
func (w *World) Signal(sig syscall.Signal) {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.daemon == nil {
		w.t.Fatal("narrowd serve is not running")
	}
	if err := w.daemon.Process.Signal(sig); err != nil {
		w.t.Fatalf("signal narrowd serve: %v", err)
	}
}
