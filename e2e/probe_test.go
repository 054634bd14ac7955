package e2e

// Probes: tool calls with an observable effect, shared by the clients'
// scenarios. Each probe says how to see whether the call ran; the
// expectation comes from narrowd's own verdict on the call (the daemon's
// audit record, cross-checked with `narrowd check`), never from a table of
// hard-coded outcomes.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// probe is one tool call of a scenario and how to see that it ran.
type probe struct {
	name string
	call ToolCall
	// ran reports whether the call took effect, from the disk, a sink, or
	// the tool result the client sent back to the model.
	ran func(w *World, res ToolResult) bool
	// never: the call must not run under any built-in profile.
	never bool
	// writes: a write inside the workspace.
	writes bool
	// sessionDependent: the verdict depends on the session's history, so
	// `narrowd check` (which knows no session) cannot predict it.
	sessionDependent bool
}

// probeEnv holds what the probes' effects are observed on.
type probeEnv struct {
	sink *Sink
}

// newProbeEnv prepares a world for the probes: a sink the curl probe
// targets, named by {{SINK}}.
func newProbeEnv(t *testing.T, w *World) *probeEnv {
	sink := NewSink(t, "sink body\n")
	w.Model.Vars["SINK"] = sink.URL
	return &probeEnv{sink: sink}
}

func fileHas(path, text string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), text)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// claudeStyleProbes are the probes for a client whose tools are Claude's
// or Copilot's, by the names in tools (shell, read, write, edit) and the
// input keys of each.
type toolNames struct {
	shell, read, write, edit string
	// readInput, writeInput, editInput render the inputs; path is a JSON
	// string body (already escaped placeholders).
	readInput  func(path string) string
	writeInput func(path, content string) string
	editInput  func(path, old, new string) string
}

var claudeToolNames = toolNames{
	shell: "Bash", read: "Read", write: "Write", edit: "Edit",
	readInput:  func(p string) string { return fmt.Sprintf(`{"file_path":%q}`, p) },
	writeInput: func(p, c string) string { return fmt.Sprintf(`{"file_path":%q,"content":%q}`, p, c) },
	editInput: func(p, o, n string) string {
		return fmt.Sprintf(`{"file_path":%q,"old_string":%q,"new_string":%q}`, p, o, n)
	},
}

var copilotToolNames = toolNames{
	shell: "bash", read: "view", write: "create", edit: "edit",
	readInput:  func(p string) string { return fmt.Sprintf(`{"path":%q}`, p) },
	writeInput: func(p, c string) string { return fmt.Sprintf(`{"path":%q,"file_text":%q}`, p, c) },
	editInput: func(p, o, n string) string {
		return fmt.Sprintf(`{"path":%q,"old_str":%q,"new_str":%q}`, p, o, n)
	},
}

func shellInput(cmd string) string {
	return fmt.Sprintf(`{"command":%q,"description":"e2e probe"}`, cmd)
}

// The probes by name.
func probeLs(n toolNames) probe {
	return probe{name: "ls", call: ToolCall{n.shell, shellInput("ls")},
		ran: func(w *World, r ToolResult) bool { return !r.IsError && strings.Contains(r.Text, "main.go") }}
}

func probeRead(n toolNames) probe {
	return probe{name: "read-readme", call: ToolCall{n.read, n.readInput("{{CWD}}/README.md")},
		ran: func(w *World, r ToolResult) bool { return !r.IsError && strings.Contains(r.Text, "hello world") }}
}

func probeWrite(n toolNames) probe {
	return probe{name: "write-new", call: ToolCall{n.write, n.writeInput("{{CWD}}/new.txt", "written by e2e\n")},
		writes: true,
		ran: func(w *World, r ToolResult) bool {
			return fileHas(filepath.Join(w.Project, "new.txt"), "written by e2e")
		}}
}

func probeEdit(n toolNames) probe {
	return probe{name: "edit-readme", call: ToolCall{n.edit, n.editInput("{{CWD}}/README.md", "second line", "edited by e2e")},
		writes: true,
		ran: func(w *World, r ToolResult) bool {
			return fileHas(filepath.Join(w.Project, "README.md"), "edited by e2e")
		}}
}

func probeTouchOutside(n toolNames) probe {
	return probe{name: "touch-outside", call: ToolCall{n.shell, shellInput("touch {{MARKER}}/created-outside")},
		ran: func(w *World, r ToolResult) bool { return exists(filepath.Join(w.Outside, "created-outside")) }}
}

func probeRmOutside(n toolNames) probe {
	return probe{name: "rm-outside", call: ToolCall{n.shell, shellInput("rm -rf {{MARKER}}")}, never: true,
		ran: func(w *World, r ToolResult) bool { return !exists(w.MarkerFile) }}
}

func probeCurl(n toolNames, pe *probeEnv) probe {
	return probe{name: "curl-sink", call: ToolCall{n.shell, shellInput("curl -s {{SINK}}/x")}, never: true, sessionDependent: true,
		ran: func(w *World, r ToolResult) bool {
			return len(pe.sink.Hits()) > 0 || strings.Contains(r.Text, "sink body")
		}}
}

func probeSSHKey(n toolNames) probe {
	return probe{name: "read-ssh-key", call: ToolCall{n.read, n.readInput("{{HOME}}/.ssh/id_rsa")}, never: true,
		ran: func(w *World, r ToolResult) bool { return strings.Contains(r.Text, "FAKE-E2E-KEY") }}
}

// scenarioOf makes a scenario with one probe per turn.
func scenarioOf(name string, ps []probe) Scenario {
	sc := Scenario{Name: name}
	for _, p := range ps {
		sc.Turns = append(sc.Turns, Turn{Calls: []ToolCall{p.call}})
	}
	sc.Turns = append(sc.Turns, Turn{Text: "all probes done"})
	return sc
}

// probeOutcome is what narrowd decided and the client did for one probe.
type probeOutcome struct {
	probe   probe
	outcome string // the daemon's pre-tool verdict (allow, ask, deny, sandbox)
	ran     bool
}

// clientSpec is what checkProbes and checkMetrics need to know of a client.
type clientSpec struct {
	agent     string // narrowd's name for it
	preEvent  string // its pre-tool event, as the audit records it
	permEvent string // its permission-request event ("" when it has none)
	// asks reports whether the client's own rules would ask a person about
	// the call in a headless run, so that narrowd's allow reaches it as a
	// permission request: the one place a prompt is really avoided.
	asks func(p probe) bool
	// permTool renames tools in permission requests (Copilot asks about
	// create as edit).
	permTool map[string]string
	// payload renders a pre-tool hook payload for `narrowd check`.
	payload func(w *World, tool string, input json.RawMessage, id string) any
}

// checkProbes asserts, for the probes of scenario sc run by a client in w,
// that every call did exactly what narrowd decided: an allow ran (with no
// denial), anything else did not run and its tool result is an error that
// carries narrowd's reason and rule. via is how the hook reached the
// daemon ("socket", "http").
func checkProbes(t *testing.T, w *World, c clientSpec, sc Scenario, ps []probe, via string) []probeOutcome {
	t.Helper()
	last := w.Model.Last(sc.Name)
	audit := w.Audit()
	var outs []probeOutcome
	for i, p := range ps {
		id := CallID(i, 0)
		res, ok := last.Result(i, 0)
		if !ok {
			t.Errorf("%s: no tool result for %s in the client's follow-up request", p.name, id)
			continue
		}
		pre := preRecord(audit, c.preEvent, id, i)
		if pre != nil && pre.ToolName != p.call.Name {
			t.Errorf("%s: the audit's pre-tool record %d is for %s, want %s", p.name, i, pre.ToolName, p.call.Name)
			continue
		}
		if pre == nil {
			t.Errorf("%s: no %s audit record for %s", p.name, c.preEvent, id)
			continue
		}
		if pre.Via != via {
			t.Errorf("%s: audit via = %q, want %q", p.name, pre.Via, via)
		}
		if !p.sessionDependent {
			in := json.RawMessage(expand(p.call.Input, w.Model.Vars))
			v := w.Check(c.agent, c.payload(w, p.call.Name, in, id))
			if v.Decision.Outcome != pre.Outcome {
				t.Errorf("%s: the daemon decided %s, narrowd check decides %s", p.name, pre.Outcome, v.Decision.Outcome)
			}
		}
		ran := p.ran(w, res)
		outs = append(outs, probeOutcome{probe: p, outcome: pre.Outcome, ran: ran})
		t.Logf("%s: narrowd %s (rule %s), ran=%v", p.name, pre.Outcome, pre.PolicyRule, ran)
		switch {
		case p.never && ran:
			t.Errorf("%s: ran (narrowd said %s, rule %s); it must never run", p.name, pre.Outcome, pre.PolicyRule)
		case pre.Outcome == "allow" && !ran:
			t.Errorf("%s: narrowd allowed it but it did not run; tool result: %+v", p.name, res)
		case pre.Outcome != "allow" && ran:
			t.Errorf("%s: narrowd said %s (rule %s) but it ran", p.name, pre.Outcome, pre.PolicyRule)
		case pre.Outcome != "allow" && (!res.IsError && !strings.Contains(res.Text, "Denied") || !strings.Contains(res.Text, "narrowd")):
			t.Errorf("%s: narrowd said %s, but the model got no error with narrowd's reason: %+v", p.name, pre.Outcome, res)
		case pre.Outcome != "allow" && !strings.Contains(res.Text, pre.PolicyRule):
			t.Errorf("%s: the reason the model got does not name rule %s: %q", p.name, pre.PolicyRule, res.Text)
		}
	}
	return outs
}

// preRecord finds the pre-tool audit record of call id, the i-th pre-tool
// call of the run: by its tool-use id where the client sends one, else by
// position (Copilot's payloads carry no id; the scenarios make one call
// per turn, in order).
func preRecord(audit []AuditRecord, event, id string, i int) *AuditRecord {
	var pres []*AuditRecord
	for j := range audit {
		if audit[j].Event != event {
			continue
		}
		if audit[j].ToolUseID != "" && strings.HasSuffix(audit[j].ToolUseID, id) {
			return &audit[j]
		}
		pres = append(pres, &audit[j])
	}
	if i < len(pres) && pres[i].ToolUseID == "" {
		return pres[i]
	}
	return nil
}

// The taint scenarios run under taintProfile (codex_test.go): everything
// is allowed except sending data out once text written by others entered
// the session.

// taintScenarios are the control (a write, then curl) and the tainted
// run (a write, a read of a project file, then the same curl to another
// path). The write returns no third-party text; it makes the session known
// to narrowd (its post-tool event is recorded) and clean: a session whose
// first call narrowd sees is unknown, and unknown never relaxes.
func taintScenarios(n toolNames) (clean, tainted Scenario) {
	clean = Scenario{Name: "taint-control", Turns: []Turn{
		{Calls: []ToolCall{{n.write, n.writeInput("{{CWD}}/clean.txt", "note\n")}}},
		{Calls: []ToolCall{{n.shell, shellInput("curl -s {{SINK}}/clean")}}},
		{Text: "fetched"},
	}}
	tainted = Scenario{Name: "taint", Turns: []Turn{
		{Calls: []ToolCall{{n.write, n.writeInput("{{CWD}}/tainted.txt", "note\n")}}},
		{Calls: []ToolCall{{n.read, n.readInput("{{CWD}}/README.md")}}},
		{Calls: []ToolCall{{n.shell, shellInput("curl -s {{SINK}}/tainted")}}},
		{Text: "done"},
	}}
	return clean, tainted
}

// checkTaint asserts the outcome of the two taint scenarios: the clean
// curl reached the sink, the tainted one did not, and its refusal names
// no-send-after-read.
func checkTaint(t *testing.T, w *World, pe *probeEnv, tainted Scenario) {
	t.Helper()
	hits := pe.sink.Hits()
	if len(hits) != 1 || !strings.HasSuffix(hits[0], "/clean") {
		t.Errorf("sink hits = %v, want exactly the clean session's GET /clean", hits)
	}
	last := w.Model.Last(tainted.Name)
	rd, ok := last.Result(1, 0)
	if !ok || !strings.Contains(rd.Text, "hello world") {
		t.Errorf("the tainting read did not run: %+v", rd)
	}
	res, ok := last.Result(2, 0)
	if !ok || !strings.Contains(res.Text, "narrowd") || !strings.Contains(res.Text, "no-send-after-read") {
		t.Errorf("the tainted curl's result = %+v, want narrowd's refusal under no-send-after-read", res)
	}
	for _, r := range w.Audit() {
		switch {
		case !strings.Contains(r.Summary, "curl"):
		case strings.Contains(r.Summary, "/clean") && (r.Outcome != "allow" || !r.SessionKnown):
			t.Errorf("clean curl audit: outcome %s, session known %v; want allow in a known session", r.Outcome, r.SessionKnown)
		case strings.Contains(r.Summary, "/tainted") && (r.Outcome != "deny" || r.PolicyRule != "no-send-after-read" || !r.SessionKnown):
			t.Errorf("tainted curl audit: outcome %s rule %s, session known %v; want deny by no-send-after-read in a known session", r.Outcome, r.PolicyRule, r.SessionKnown)
		}
	}
}

// checkDaemonDown checks a scenario run with the daemon stopped: each
// probe ran only if the profile allows it and it may ever run. With
// blocked, nothing may run (a hook nobody answers that blocks); else the
// hook judged in-process, so what the profile allows must run. A refused
// probe's result must hold refusal ("" checks nothing). Nothing reaches
// the marker or the sink.
func checkDaemonDown(t *testing.T, w *World, spec clientSpec, pe *probeEnv, ps []probe, sc Scenario, blocked bool, refusal string) {
	t.Helper()
	last := w.Model.Last(sc.Name)
	for i, p := range ps {
		res, ok := last.Result(i, 0)
		if !ok {
			t.Errorf("%s: no tool result", p.name)
			continue
		}
		in := json.RawMessage(expand(p.call.Input, w.Model.Vars))
		v := w.Check(spec.agent, spec.payload(w, p.call.Name, in, CallID(i, 0)))
		ran := p.ran(w, res)
		t.Logf("%s: profile says %s, ran=%v", p.name, v.Decision.Outcome, ran)
		switch {
		case ran && (p.never || v.Decision.Outcome != "allow"):
			t.Errorf("%s ran with the daemon down although the profile says %s", p.name, v.Decision.Outcome)
		case !blocked && v.Decision.Outcome == "allow" && !ran:
			t.Errorf("%s: the in-process fallback should have let it run (profile: allow): %+v", p.name, res)
		case blocked && ran:
			t.Errorf("%s ran with the hook unanswered", p.name)
		case !ran && refusal != "" && !strings.Contains(res.Text, refusal):
			t.Errorf("%s: refused without %q in the result: %+v", p.name, refusal, res)
		}
	}
	mustExist(t, w.MarkerFile, "")
	if len(pe.sink.Hits()) != 0 {
		t.Errorf("the sink got requests: %v", pe.sink.Hits())
	}
}
