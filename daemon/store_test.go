package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/rules"
)

func TestSessionsPersist(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSessions(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Get("claude", "a"); got.Known {
		t.Fatal("a session with no history is known")
	}
	if got := s.Get("claude", ""); got.Known {
		t.Fatal("a call without a session id is known")
	}
	if err := s.Record("claude", "a", "claude/WebFetch", []string{ReadsUntrusted, ExternalEffect}); err != nil {
		t.Fatal(err)
	}
	s.Record("claude", "a", "claude/Read", nil)
	s.Record("claude", "b", "claude/Read", nil)
	got := s.Get("claude", "a")
	if !got.Known || !got.Called[ReadsUntrusted] || !got.Called[ExternalEffect] || got.Called[Destructive] ||
		!slices.Equal(got.Tools, []string{"claude/WebFetch", "claude/Read"}) {
		t.Fatalf("session a: %+v", got)
	}
	// The same session id from another agent is another session.
	if s.Get("codex", "a").Known {
		t.Fatal("session ids leak across agents")
	}
	s.Close()

	// History survives a restart.
	s, err = OpenSessions(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Get("claude", "a"); !got.Known || !got.Called[ReadsUntrusted] || len(got.Tools) != 2 {
		t.Fatalf("after restart: %+v", got)
	}
	// A gap makes the session unknown, durably.
	if err := s.MarkGap("claude", "a"); err != nil {
		t.Fatal(err)
	}
	if s.Get("claude", "a").Known {
		t.Fatal("a session with a gap is known")
	}
	s.Record("claude", "a", "claude/Read", nil)
	if s.Get("claude", "a").Known {
		t.Fatal("history after a gap made the session known again")
	}
	s.Close()

	// The shim marks a gap without the daemon.
	if err := AppendGap(dir, "claude", "b"); err != nil {
		t.Fatal(err)
	}
	s, err = OpenSessions(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Get("claude", "a").Known || s.Get("claude", "b").Known {
		t.Fatal("gaps forgotten after restart")
	}
}

func TestSessionsBounded(t *testing.T) {
	s, err := OpenSessions(t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.maxSessions, s.maxTools = 3, 4
	for i := range 10 {
		s.Record("claude", "one", fmt.Sprintf("claude/T%d", i), nil)
	}
	if got := s.Get("claude", "one").Tools; len(got) != 4 || got[3] != "claude/T9" {
		t.Fatalf("tools not bounded: %v", got)
	}
	for i := range 4 {
		s.Record("claude", fmt.Sprintf("s%d", i), "claude/Read", nil)
	}
	// "one" was least recently used: dropped, and unknown from now on.
	if s.Get("claude", "one").Known {
		t.Fatal("evicted session still known")
	}
	s.Record("claude", "one", "claude/Read", nil)
	if s.Get("claude", "one").Known {
		t.Fatal("evicted session known again after new history")
	}
}

func TestSessionsCompact(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSessions(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	s.maxTools = 2
	for i := range 2100 {
		s.Record("claude", "c", fmt.Sprintf("claude/T%d", i%5), []string{ReadsSensitive})
	}
	s.Close()
	b, _ := os.ReadFile(filepath.Join(dir, sessionsName))
	if n := strings.Count(string(b), "\n"); n > 1100 {
		t.Errorf("history not compacted: %d lines for 2100 records", n)
	}
	s, err = OpenSessions(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Get("claude", "c"); !got.Known || !got.Called[ReadsSensitive] {
		t.Fatalf("compaction lost history: %+v", got)
	}
}

func TestCalledLabels(t *testing.T) {
	l := func(mut string, rev string, egress string, fin string, ret string) *rules.Labels {
		var x rules.Labels
		set := func(d rules.Dim, v string) {
			lv, err := d.Parse(v)
			if err != nil {
				t.Fatal(err)
			}
			x = x.With(d, lv)
		}
		set(rules.Mutation, mut)
		set(rules.Reversibility, rev)
		set(rules.Egress, egress)
		set(rules.Financial, fin)
		set(rules.ReturnsClass, ret)
		return &x
	}
	for _, tt := range []struct {
		name string
		v    rules.Verdict
		want []string
	}{
		{"unlabelled", rules.Verdict{}, []string{ReadsUntrusted, ExternalEffect, Destructive, MovesMoney, ReadsSensitive}},
		{"read-local", rules.Verdict{Narrowed: l("read", "reversible", "none", "none", "first_party_structured")}, nil},
		{"web-fetch", rules.Verdict{Narrowed: l("read", "reversible", "external", "none", "third_party_content")}, []string{ReadsUntrusted, ExternalEffect}},
		{"rm-rf", rules.Verdict{Narrowed: l("delete", "irreversible", "none", "none", "first_party_structured")}, []string{Destructive}},
		{"indirect-money", rules.Verdict{Narrowed: l("read", "reversible", "none", "indirect", "first_party_structured")}, nil},
		{"pay", rules.Verdict{Narrowed: l("create", "irreversible", "external", "direct", "first_party_structured")}, []string{ExternalEffect, MovesMoney}},
		{"secret", rules.Verdict{Narrowed: l("read", "reversible", "none", "none", "first_party_structured"),
			Evidence: []rules.Evidence{{Kind: "sensitive-name", Strength: rules.Guess}}}, []string{ReadsSensitive}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := CalledLabels(tt.v); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAnswer(t *testing.T) {
	verdict := func(o, ceiling rules.Outcome) rules.Verdict {
		return rules.Verdict{Decision: rules.Decision{Outcome: o, Rule: "r", Reason: "because"}, CeilingOutcome: ceiling}
	}
	call := func(agentName string, phase rules.Phase, event string) rules.Call {
		return rules.Call{Agent: agentName, Phase: phase, Event: event, Tool: "Bash"}
	}
	for _, tt := range []struct {
		name           string
		call           rules.Call
		v              rules.Verdict
		allowAtPreTool bool
		answer         string
		emptyReply     bool
		avoided, est   bool
	}{
		{"claude-pre-allow-abstains", call("claude", rules.PreTool, "PreToolUse"), verdict(rules.Allow, rules.Ask), false, "abstain", true, false, false},
		{"codex-pre-allow-abstains", call("codex", rules.PreTool, "PreToolUse"), verdict(rules.Allow, rules.Ask), false, "abstain", true, false, false},
		{"copilot-pre-allow-abstains", call("copilot", rules.PreTool, "preToolUse"), verdict(rules.Allow, rules.Ask), false, "abstain", true, false, false},
		{"claude-permission-allow-avoided", call("claude", rules.PermissionAsk, "PermissionRequest"), verdict(rules.Allow, rules.Ask), false, "allow", false, true, false},
		{"claude-permission-deny", call("claude", rules.PermissionAsk, "PermissionRequest"), verdict(rules.Deny, rules.Deny), false, "deny", false, false, false},
		{"claude-pre-ask-answered", call("claude", rules.PreTool, "PreToolUse"), verdict(rules.Ask, rules.Ask), false, "ask", false, false, false},
		{"claude-pre-deny-answered", call("claude", rules.PreTool, "PreToolUse"), verdict(rules.Deny, rules.Deny), false, "deny", false, false, false},
		{"claude-switch-off-estimates", call("claude", rules.PreTool, "PreToolUse"), verdict(rules.Allow, rules.Ask), true, "allow", false, false, true},
		{"gemini-pre-allow-estimate", call("gemini", rules.PreTool, "BeforeTool"), verdict(rules.Allow, rules.Ask), false, "allow", false, false, true},
		{"gemini-pre-allow-no-estimate", call("gemini", rules.PreTool, "BeforeTool"), verdict(rules.Allow, rules.Allow), false, "allow", false, false, false},
		{"cursor-pre-allow-estimate", call("cursor", rules.PreTool, "preToolUse"), verdict(rules.Allow, rules.Deny), false, "allow", false, false, true},
		{"gemini-deny", call("gemini", rules.PreTool, "BeforeTool"), verdict(rules.Deny, rules.Deny), false, "deny", false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			answer, reply, avoided, est := Answer(tt.call, tt.v, agent.Options{}, tt.allowAtPreTool)
			if answer != tt.answer || avoided != tt.avoided || est != tt.est {
				t.Fatalf("answer %q avoided %v estimate %v; want %q %v %v", answer, avoided, est, tt.answer, tt.avoided, tt.est)
			}
			empty := len(reply.Stdout) == 0 && reply.ExitCode == 0
			if empty != tt.emptyReply {
				t.Fatalf("reply %+v", reply)
			}
			if tt.v.Decision.Outcome != rules.Allow && (empty || strings.Contains(string(reply.Stdout), `"allow"`)) {
				t.Fatalf("a %v verdict was answered %s", tt.v.Decision.Outcome, reply.Stdout)
			}
		})
	}
}

func TestCountPromptsAvoided(t *testing.T) {
	d := startDaemon(t, nil)
	v := rules.Verdict{Decision: rules.Decision{Outcome: rules.Allow}, CeilingOutcome: rules.Ask,
		Evidence: []rules.Evidence{{Kind: "path-inside", Strength: rules.Proven}, {Kind: "Bad Kind/../x", Strength: rules.Guess}}}
	d.count(rules.Call{Agent: "claude", Tool: "Bash"}, v, "allow", true, false)
	d.count(rules.Call{Agent: "gemini", Tool: "mcp_db_drop"}, v, "allow", false, true)
	d.count(rules.Call{Agent: "cursor", Tool: "SomethingNew"}, rules.Verdict{}, "deny", false, false)
	mf := d.scrape(t)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"narrowd_prompts_avoided_total", map[string]string{"agent": "claude", "tool": "Bash"}, 1},
		{"narrowd_prompts_avoided_estimate_total", map[string]string{"agent": "gemini", "tool": "mcp"}, 1},
		{"narrowd_decisions_total", map[string]string{"agent": "cursor", "tool": "other", "outcome": "deny"}, 1},
		{"narrowd_unlabelled_calls_total", map[string]string{"agent": "cursor"}, 1},
		{"narrowd_evidence_total", map[string]string{"kind": "path-inside", "strength": "proven"}, 2},
		{"narrowd_evidence_total", map[string]string{"kind": "other", "strength": "guess"}, 2},
	} {
		if got := metricSum(mf, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestToolLabel(t *testing.T) {
	m := NewMetrics("test")
	for _, tt := range []struct{ agent, tool, want string }{
		{"claude", "Bash", "Bash"},
		{"claude", "mcp__github__create_issue", "mcp"},
		{"codex", "mcp__x__y", "mcp"},
		{"gemini", "mcp_x_y", "mcp"},
		{"gemini", "run_shell_command", "run_shell_command"},
		{"cursor", "MCP:query", "mcp"},
		{"copilot", "github-create_issue", "other"},
		{"claude", "/etc/passwd", "other"},
		{"evil", "Bash", "other"},
	} {
		if got := m.toolLabel(tt.agent, tt.tool); got != tt.want {
			t.Errorf("toolLabel(%q, %q) = %q, want %q", tt.agent, tt.tool, got, tt.want)
		}
	}
	if agentLabel("claude") != "claude" || agentLabel("x/y") != "other" {
		t.Error("agentLabel not bounded")
	}
}

func TestAuditRotation(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenAudit(dir, AuditOptions{MaxSize: 2000, Keep: 2}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if err := a.Append(&Record{ID: fmt.Sprintf("r%03d", i), Reason: strings.Repeat("x", 100), Timestamp: "2026-11-30T12:00:00Z"}); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	rotated, _ := rotatedAuditFiles(dir)
	if len(rotated) != 2 {
		t.Fatalf("%d rotated files kept, want 2: %v", len(rotated), rotated)
	}
	var ids []string
	ReadAudit(dir, func(r *Record) error { ids = append(ids, r.ID); return nil })
	if len(ids) == 0 || ids[len(ids)-1] != "r059" || !slices.IsSorted(ids) {
		t.Fatalf("records after rotation: %v", ids)
	}
	for _, p := range append(rotated, filepath.Join(dir, auditName)) {
		fi, _ := os.Stat(p)
		if fi.Size() > 2000+400 {
			t.Errorf("%s is %d bytes", p, fi.Size())
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", p, fi.Mode().Perm())
		}
	}
}

func TestPostToolFeedsSession(t *testing.T) {
	d := startDaemon(t, nil)
	ctx := context.Background()
	c := d.client()
	if _, err := c.Hook(ctx, "claude", mcpCall("hist"), nil); err != nil {
		t.Fatal(err)
	}
	post := claudePayload("PostToolUse", "hist", "mcp__evil__wipe", map[string]any{"target": "prod"})
	env, err := c.Hook(ctx, "claude", post, nil)
	if err != nil || env.ExitCode != 0 || len(env.Stdout) != 0 || env.ID != "" {
		t.Fatalf("post-tool reply %+v %v", env, err)
	}
	env, err = c.Hook(ctx, "claude", mcpCall("hist"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := auditIDs(t, d.cfg.AuditDir)[env.ID]
	if r == nil || !r.SessionKnown {
		t.Fatalf("second call's session not known: %+v", r)
	}
	// An unlabelled tool ran: the session carries every seed 003 label.
	got := d.sessions.Get("claude", "hist")
	for _, l := range []string{ReadsUntrusted, ExternalEffect, Destructive, MovesMoney, ReadsSensitive} {
		if !got.Called[l] {
			t.Errorf("session lacks %s after an unlabelled tool ran", l)
		}
	}
}

func TestJournalSlowDiskFails(t *testing.T) {
	stuck := make(chan struct{})
	j, err := openJournal(filepath.Join(t.TempDir(), "j"), journalOptions{
		limit: 1,
		full: func(f *os.File, size int64) (*os.File, int64, error) {
			<-stuck // a disk that does not answer
			return f, size, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.AppendWithin([]byte("one\n"), time.Second, nil); err != nil {
		t.Fatal(err)
	}
	late := func(s string) func() []byte { return func() []byte { return []byte(s) } }
	start := time.Now()
	// "two" is in the batch the writer is stuck on: it may still reach
	// the file, so its correction is written after it.
	err = j.AppendWithin([]byte("two\n"), 200*time.Millisecond, late("two corrected\n"))
	if !errors.Is(err, errSlow) || time.Since(start) > 2*time.Second {
		t.Fatalf("append to a stuck disk: %v after %v", err, time.Since(start))
	}
	// "three" waits for the writer: it is withdrawn, never written.
	err = j.AppendWithin([]byte("three\n"), 100*time.Millisecond, late("three corrected\n"))
	if !errors.Is(err, errWithdrawn) {
		t.Fatalf("second append to a stuck disk: %v", err)
	}
	close(stuck)
	j.Close()
	if err := j.Append([]byte("four\n")); !errors.Is(err, errClosed) {
		t.Fatalf("append after close: %v", err)
	}
	b, err := os.ReadFile(j.path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "one\ntwo\ntwo corrected\n"; got != want {
		t.Errorf("file holds %q, want %q", got, want)
	}
}

// TestJournalWithdrawKeepsOthers: a line withdrawn from the middle of a
// batch leaves the lines before and after it whole.
func TestJournalWithdrawKeepsOthers(t *testing.T) {
	b := &batch{}
	for _, l := range []string{"a\n", "bb\n", "ccc\n"} {
		b.buf = append(b.buf, l...)
		b.ends = append(b.ends, len(b.buf))
		b.n++
	}
	b.withdraw(1)
	if string(b.buf) != "a\nccc\n" || b.n != 2 {
		t.Fatalf("after withdrawing the middle line: %q, n %d", b.buf, b.n)
	}
	b.withdraw(2)
	b.withdraw(0)
	if len(b.buf) != 0 || b.n != 0 {
		t.Fatalf("after withdrawing all: %q, n %d", b.buf, b.n)
	}
}

// TestPermissionProtocol runs the abstain-then-permission protocol end to
// end with a call the engine allows on proof (a read inside the
// workspace) but whose ceiling needs a person.
func TestPermissionProtocol(t *testing.T) {
	ws := t.TempDir()
	read := map[string]any{"command": "ls -la"}
	probe, err := NewEngine(EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	pre := claudePayload("PreToolUse", "perm", "Bash", read)
	pre = []byte(strings.Replace(string(pre), `"cwd":"/tmp"`, `"cwd":"`+ws+`"`, 1))
	call, err := agent.Decode("claude", bytesReader(pre))
	if err != nil {
		t.Fatal(err)
	}
	if v := probe.Judge(call, rules.Session{}); v.Decision.Outcome != rules.Allow || v.CeilingOutcome == rules.Allow {
		t.Skipf("this engine does not allow a workspace read on proof (%v, ceiling %v)", v.Decision.Outcome, v.CeilingOutcome)
	}
	d := startDaemon(t, nil)
	ctx := context.Background()
	c := d.client()

	// Pre-tool: no opinion, so Claude's own flow decides.
	env, err := c.Hook(ctx, "claude", pre, nil)
	if err != nil || env.ExitCode != 0 || len(env.Stdout) != 0 {
		t.Fatalf("pre-tool allow did not abstain: %+v %v", env, err)
	}
	if r := auditIDs(t, d.cfg.AuditDir)[env.ID]; r == nil || r.Answer != "abstain" || r.Outcome != "allow" {
		t.Fatalf("abstain record: %+v", r)
	}
	// Claude is about to ask: narrowd allows, a real prompt avoided.
	perm := []byte(strings.Replace(string(claudePayload("PermissionRequest", "perm", "Bash", read)), `"cwd":"/tmp"`, `"cwd":"`+ws+`"`, 1))
	env, err = c.Hook(ctx, "claude", perm, nil)
	if err != nil || !strings.Contains(string(env.Stdout), `"behavior":"allow"`) {
		t.Fatalf("permission request not allowed: %+v %v", env, err)
	}
	if r := auditIDs(t, d.cfg.AuditDir)[env.ID]; r == nil || !r.PromptAvoided || r.PromptAvoidedEstimate {
		t.Fatalf("permission record: %+v", r)
	}
	// Gemini has no permission hook: allow at pre-tool, counted as an
	// estimate.
	gem := fmt.Sprintf(`{"session_id":"g","transcript_path":"/t","cwd":%q,"hook_event_name":"BeforeTool","timestamp":"2026-11-30T10:30:09.099Z","tool_name":"run_shell_command","tool_input":{"command":"ls -la"}}`, ws)
	env, err = c.Hook(ctx, "gemini", []byte(gem), nil)
	if err != nil || !strings.Contains(string(env.Stdout), `"decision":"allow"`) {
		t.Fatalf("gemini allow: %+v %v", env, err)
	}
	mf := d.scrape(t)
	if got := metricSum(mf, "narrowd_prompts_avoided_total", map[string]string{"agent": "claude", "tool": "Bash"}); got != 1 {
		t.Errorf("prompts avoided = %v, want 1", got)
	}
	if got := metricSum(mf, "narrowd_prompts_avoided_estimate_total", map[string]string{"agent": "gemini"}); got != 1 {
		t.Errorf("estimate = %v, want 1", got)
	}
	if got := metricSum(mf, "narrowd_prompts_avoided_estimate_total", map[string]string{"agent": "claude"}); got != 0 {
		t.Errorf("claude counted as an estimate: %v", got)
	}
	if got := metricSum(mf, "narrowd_decisions_total", map[string]string{"agent": "claude", "outcome": "abstain"}); got != 1 {
		t.Errorf("abstain decisions = %v, want 1", got)
	}
}

func TestSessionsGapWrittenLater(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSessions(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	s.Record("claude", "w", "claude/Read", nil)
	// The disk refuses the next history line: the session is forgotten
	// in memory at once, and the gap is written with the next line that
	// can be.
	good := s.j
	broken, _ := openJournal(filepath.Join(dir, "other"), journalOptions{})
	broken.Close()
	s.j = broken
	if err := s.Record("claude", "w", "claude/WebFetch", []string{ReadsUntrusted}); err == nil {
		t.Fatal("append to a closed journal succeeded")
	}
	s.forget("claude", "w")
	if s.Get("claude", "w").Known {
		t.Fatal("session with lost history is known")
	}
	s.j = good
	if err := s.Record("claude", "x", "claude/Read", nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = OpenSessions(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Get("claude", "w").Known {
		t.Fatal("after a restart the session with lost history reads as known")
	}
	if !s.Get("claude", "x").Known {
		t.Fatal("other session lost")
	}
}

// TestReadAuditAppliesCorrections: a record whose call was answered with
// a block after it was written is read with the answer the agent got.
func TestReadAuditAppliesCorrections(t *testing.T) {
	dir := t.TempDir()
	var lines []byte
	for _, r := range []Record{
		{ID: "r1", Answer: "abstain"},
		{ID: "r2", Answer: "allow"},
		{ID: "r1", Answer: "error", Error: "late", Corrects: true},
		{ID: "r3", Answer: "error", Error: "late", Corrects: true}, // its record never made it
	} {
		lines = append(appendRecord(lines, &r), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, auditName), lines, 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := ReadAudit(dir, func(r *Record) error {
		got = append(got, r.ID+":"+r.Answer+":"+r.Error)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"r1:error:late", "r2:allow:", "r3:error:late"}; !slices.Equal(got, want) {
		t.Errorf("read %q, want %q", got, want)
	}
}
