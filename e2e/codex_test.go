package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// codexClient is OpenAI's Codex CLI, the release real-clients.md §4 was
// verified against.
var codexClient = npmClient{Pkg: "@openai/codex", Version: "0.169.0", Bin: "codex"}

// writeCodexConfig writes the user's config.toml with an approval policy
// and a sandbox mode.
func writeCodexConfig(w *World, approval, sandbox string) {
	cfg := `model = "gpt-5.5"
model_provider = "fake"
approval_policy = "` + approval + `"
sandbox_mode = "` + sandbox + `"

[model_providers.fake]
name = "fake"
base_url = "` + w.Model.URL() + `/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"

[projects."` + w.Project + `"]
trust_level = "trusted"

[analytics]
enabled = false
`
	w.WriteFile(filepath.Join(w.Home, ".codex", "config.toml"), cfg)
}

// runCodex runs `codex exec` headless on one scenario in the project and
// returns what it printed, with extra flags for codex exec. A run that
// fails or times out fails the test.
func runCodex(t *testing.T, w *World, bin string, sc Scenario, extra ...string) Result {
	t.Helper()
	w.Model.Add(sc)
	args := append([]string{"exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust"}, extra...)
	res := w.Exec(Run{
		Bin:     bin,
		Args:    append(args, "SCENARIO="+sc.Name+" CWD="+w.Project+" go"),
		Env:     []string{"CODEX_HOME=" + filepath.Join(w.Home, ".codex"), "FAKE_API_KEY=dummy"},
		Timeout: 90 * time.Second,
	})
	t.Logf("codex %s: %v in %v", sc.Name, res.Err, res.Duration.Round(time.Millisecond))
	if res.Err != nil {
		t.Fatalf("codex run %s: %v\nstdout: %s\nstderr: %s", sc.Name, res.Err, res.Stdout, res.Stderr)
	}
	return res
}

// shell is a scripted exec_command call.
func shell(cmd string) ToolCall {
	b, _ := json.Marshal(map[string]string{"cmd": cmd})
	return ToolCall{Name: "exec_command", Input: string(b)}
}

// patch is a scripted apply_patch call with the raw patch text.
func patch(text string) ToolCall {
	b, _ := json.Marshal(text)
	return ToolCall{Name: "apply_patch", Input: string(b)}
}

// codexID is the call id Codex reports to the hook for CallID(turn, 0).
func codexID(turn int) string { return "call_" + CallID(turn, 0) }

// blockedByNarrowd is how Codex tells the model that a PreToolUse hook
// blocked a call; narrowd's reason follows.
const blockedByNarrowd = "Command blocked by PreToolUse hook: narrowd"

// codexDriver is Codex to the shared scenarios (agents_test.go). Its
// hook payloads carry the model's call ids, so each call's audit record
// is found by id.
var codexDriver = driver{
	name: "codex", client: codexClient,
	// The config file is the user's: the provider, and the trust decision
	// for the project (Codex runs hooks only in a trusted project, and
	// only with --dangerously-bypass-hook-trust, which runCodex passes;
	// that trust is the user's to give, not narrowd's).
	setup: func(w *World) {
		w.Model.HandleOpenAI()
		writeCodexConfig(w, "never", "danger-full-access")
	},
	run: func(t *testing.T, w *World, bin string, sc Scenario) Result {
		t.Helper()
		return runCodex(t, w, bin, sc)
	},
	shell: shell,
	read:  func(file string) ToolCall { return shell("cat " + file) },
	write: func(file, content string) ToolCall {
		return shell("printf '" + strings.ReplaceAll(content, "\n", `\n`) + "' > " + file)
	},
	blocked: blockedByNarrowd, hookFailed: blockedByNarrowd,
	settings:     func(w *World) string { return filepath.Join(w.Home, ".codex", "config.toml") },
	keep:         `model_provider = "fake"`,
	wantOutcomes: codexOutcomes,
}

// codexOutcomes checks that each call of sc has exactly one pre-tool
// audit record, found by its call id, with the wanted outcome. An allow
// is answered as an abstain (Codex treats a plain allow as an unsupported
// answer), a sandbox as the rewrite to narrowd exec.
func codexOutcomes(t *testing.T, w *World, sc Scenario, outcomes ...string) {
	t.Helper()
	if n := len(callsOf(sc)); n != len(outcomes) {
		t.Fatalf("%s has %d calls, %d outcomes given", sc.Name, n, len(outcomes))
	}
	audit, k := w.Audit(), 0
	for turn, tu := range sc.Turns {
		for i := range tu.Calls {
			id, want := "call_"+CallID(turn, i), outcomes[k]
			k++
			var pre []AuditRecord
			for _, r := range audit {
				if r.ToolUseID == id && r.Phase == "pre_tool" {
					pre = append(pre, r)
				}
			}
			if len(pre) != 1 {
				t.Errorf("%s: pre-tool audit records %+v, want one %s", id, pre, want)
				continue
			}
			r, answer := pre[0], map[string]string{"allow": "abstain", "sandbox": "sandbox"}[want]
			if r.Event != "PreToolUse" || !outcomeIs(r.Outcome, want) || answer != "" && r.Answer != answer {
				t.Errorf("audit for %s = event %s outcome %s answer %s (rule %s), want PreToolUse %s %s",
					id, r.Event, r.Outcome, r.Answer, r.PolicyRule, want, answer)
			}
		}
	}
}

func TestCodexHarmlessRead(t *testing.T) { testHarmlessRead(t, codexDriver) }

// TestCodexWorkspaceWrite: Codex cannot ask, so strict's ask is a deny.
func TestCodexWorkspaceWrite(t *testing.T) { testWorkspaceWrite(t, codexDriver) }

func TestCodexDangerousNeverRuns(t *testing.T) { testDangerousNeverRuns(t, codexDriver, nil, nil) }

// TestCodexAskNeverRuns: "ask" is an unsupported answer to Codex, and an
// unsupported answer lets the tool run.
func TestCodexAskNeverRuns(t *testing.T) { testAskNeverRuns(t, codexDriver) }

func TestCodexDaemonStopped(t *testing.T) { testDaemonStopped(t, codexDriver) }

// TestCodexSessionTaint: taintScenarios' shape with Codex's tools
// (exec_command takes cmd, not command): a patch returns no third-party
// text and makes the session known and clean; cat then brings a project
// file in.
func TestCodexSessionTaint(t *testing.T) {
	clean := oneCallPerTurn("taint-control",
		patch("*** Begin Patch\n*** Add File: clean.txt\n+note\n*** End Patch\n"),
		shell("curl -s {{SINK}}/clean"))
	tainted := oneCallPerTurn("taint",
		patch("*** Begin Patch\n*** Add File: tainted.txt\n+note\n*** End Patch\n"),
		shell("cat README.md"),
		shell("curl -s {{SINK}}/tainted"))
	testSessionTaint(t, codexDriver, clean, tainted)
}

func TestCodexInstallLevels(t *testing.T) { testInstallLevels(t, codexDriver) }

func TestCodexParallelCalls(t *testing.T) { testParallelCalls(t, codexDriver) }

func TestCodexSandbox(t *testing.T) { testSandbox(t, codexDriver) }

func TestCodexApplyPatch(t *testing.T) {
	t.Parallel()
	w, bin := codexDriver.world(t, WorldOptions{})
	w.Start()
	outside := filepath.Join(w.Outside, "planted.txt")
	sc := Scenario{Name: "codex-patch", Turns: []Turn{
		// One new file inside the workspace: write-workspace-file allows.
		{Calls: []ToolCall{patch("*** Begin Patch\n*** Add File: added.txt\n+from a patch\n*** End Patch\n")}},
		// A file outside, by absolute path and by climbing out.
		{Calls: []ToolCall{patch("*** Begin Patch\n*** Add File: " + outside + "\n+planted\n*** End Patch\n")}},
		{Calls: []ToolCall{patch("*** Begin Patch\n*** Add File: ../outside/climbed.txt\n+planted\n*** End Patch\n")}},
		// A pure deletion inside the workspace: asked about, so refused.
		{Calls: []ToolCall{patch("*** Begin Patch\n*** Delete File: main.go\n*** End Patch\n")}},
		// An edit of a workspace file.
		{Calls: []ToolCall{patch("*** Begin Patch\n*** Update File: README.md\n@@\n-hello world\n+hello patched\n*** End Patch\n")}},
	}}
	runCodex(t, w, bin, sc)
	last := w.Model.Last(sc.Name)

	mustExist(t, filepath.Join(w.Project, "added.txt"), "from a patch\n")
	wantAudit(t, w, codexID(0), "PreToolUse", "allow", "abstain")

	mustNotExist(t, outside)
	mustNotExist(t, filepath.Join(w.Outside, "climbed.txt"))
	mustExist(t, filepath.Join(w.Project, "main.go"), "package main\n\nfunc main() {}\n")
	for turn := 1; turn <= 3; turn++ {
		res, _ := last.Result(turn, 0)
		if !strings.Contains(res.Text, "blocked by PreToolUse hook: narrowd") {
			t.Errorf("turn %d result = %q, want narrowd's refusal", turn, res.Text)
		}
		recs := w.AuditFor(codexID(turn))
		if len(recs) == 0 || recs[0].ToolName != "apply_patch" || recs[0].Outcome == "allow" {
			t.Errorf("turn %d audit = %+v, want apply_patch refused", turn, recs)
		}
	}
	mustExist(t, filepath.Join(w.Project, "README.md"), "hello patched\nsecond line\n")
	wantAudit(t, w, codexID(4), "PreToolUse", "allow", "abstain")

	// Judged as a patch, from the envelope Codex hands the hook: the
	// evidence counts the patch's files, and names a path outside.
	for _, tt := range []struct {
		turn      int
		want, not []string
	}{
		{0, []string{`"kind":"patch-files"`, "1 added, 0 updated, 0 deleted", `"kind":"patch-adds-only"`}, nil},
		{1, []string{outside}, []string{`"kind":"patch-files"`}},
		{3, []string{"0 added, 0 updated, 1 deleted"}, []string{`"kind":"patch-no-delete"`}},
		{4, []string{"0 added, 1 updated, 0 deleted", `"kind":"patch-no-delete"`}, nil},
	} {
		ev := w.Evidence(codexID(tt.turn))
		for _, s := range tt.want {
			if !strings.Contains(ev, s) {
				t.Errorf("turn %d: evidence lacks %s: %s", tt.turn, s, ev)
			}
		}
		for _, s := range tt.not {
			if strings.Contains(ev, s) {
				t.Errorf("turn %d: evidence has %s: %s", tt.turn, s, ev)
			}
		}
	}
}

// TestCodexMetrics: after a scripted run of calls narrowd allows, asks
// about and denies, the daemon's counters equal its audit log, and every
// call did what its record says: an allowed call ran, no other call did.
// codex exec never asks a person (its approval policy is forced to
// never), so no permission request reaches narrowd and no prompt is
// avoided, really or by estimate (an allow is an abstain at pre-tool).
func TestCodexMetrics(t *testing.T) {
	t.Parallel()
	w, bin := codexDriver.world(t, WorldOptions{})
	sink := NewSink(t, "sink body\n")
	w.Model.Vars["SINK"] = sink.URL
	w.Start()
	type step struct {
		call ToolCall
		ran  func(res ToolResult) bool
	}
	steps := []step{
		{shell("ls"), func(r ToolResult) bool { return strings.Contains(r.Text, "main.go") }},
		{shell("cat README.md"), func(r ToolResult) bool { return strings.Contains(r.Text, "second line") }},
		{shell("printf 'm\\n' > metrics.txt"), func(ToolResult) bool { return exists(filepath.Join(w.Project, "metrics.txt")) }},
		{patch("*** Begin Patch\n*** Add File: patched.txt\n+p\n*** End Patch\n"), func(ToolResult) bool { return exists(filepath.Join(w.Project, "patched.txt")) }},
		{shell("rm main.go"), func(ToolResult) bool { return !exists(filepath.Join(w.Project, "main.go")) }},
		{shell("rm -rf {{MARKER}}"), func(ToolResult) bool { return !exists(w.MarkerFile) }},
		{shell("curl -s {{SINK}}/m"), func(ToolResult) bool { return len(sink.Hits()) > 0 }},
	}
	sc := Scenario{Name: "codex-metrics"}
	for _, s := range steps {
		sc.Turns = append(sc.Turns, Turn{Calls: []ToolCall{s.call}})
	}
	runCodex(t, w, bin, sc)
	last := w.Model.Last(sc.Name)
	recs := checkAgentMetrics(t, w, "codex", len(steps))
	outcomes := map[string]int{}
	for i, s := range steps {
		res, _ := last.Result(i, 0)
		r := w.AuditFor(codexID(i))
		if len(r) != 1 {
			t.Errorf("turn %d: audit records %+v, want one", i, r)
			continue
		}
		outcomes[r[0].Outcome]++
		allowed := r[0].Answer == "abstain"
		if ran := s.ran(res); ran != allowed {
			t.Errorf("turn %d: ran=%v, but narrowd answered %s (outcome %s, rule %s)", i, ran, r[0].Answer, r[0].Outcome, r[0].PolicyRule)
		}
	}
	// The scenario is only a test of the counters if it exercised them.
	if outcomes["allow"] == 0 || outcomes["ask"] == 0 || outcomes["deny"] == 0 {
		t.Errorf("outcomes %v, want allows, asks and denies", outcomes)
	}
	for _, r := range recs {
		if r.PromptAvoided || r.PromptAvoidedEstimate {
			t.Errorf("record %s (%q) counts a prompt avoided; codex exec asks no one", r.ID, r.Summary)
		}
	}
}

// TestCodexPromptsAvoided: the one place narrowd really spares a person a
// prompt. With approval on request (and --approve-for-me, the headless
// way to let exec ask), a command the model runs with escalated
// permissions makes Codex ask first: narrowd abstains at PreToolUse for a
// call it would allow, answers Codex's PermissionRequest with allow, and
// counts a prompt avoided; a call it would not allow is refused at
// PreToolUse and never reaches a permission request. The counters must
// equal exactly that, and no approval ever reaches Codex's own reviewer
// (which would be a request to the model).
func TestCodexPromptsAvoided(t *testing.T) {
	t.Parallel()
	w, bin := codexDriver.world(t, WorldOptions{})
	writeCodexConfig(w, "on-request", "workspace-write")
	w.Start()
	escalated := func(cmd string) ToolCall {
		b, _ := json.Marshal(map[string]string{"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": "scripted"})
		return ToolCall{Name: "exec_command", Input: string(b)}
	}
	sc := Scenario{Name: "codex-avoided", Turns: []Turn{
		{Calls: []ToolCall{escalated("ls")}},
		{Calls: []ToolCall{escalated("cat README.md")}},
		{Calls: []ToolCall{escalated("printf 'x\\n' > notes.txt")}},
		{Calls: []ToolCall{escalated("rm main.go")}},
	}}
	runCodex(t, w, bin, sc, "--approve-for-me")
	last := w.Model.Last(sc.Name)
	// Codex's PermissionRequest payload carries no tool-call id: its
	// records are matched by order and command.
	var perms []AuditRecord
	for _, r := range w.Audit() {
		if r.Event == "PermissionRequest" {
			perms = append(perms, r)
		}
	}
	if len(perms) != 3 {
		t.Errorf("permission requests in the audit: %+v, want 3", perms)
	}
	for i, want := range []string{"main.go", "second line", ""} {
		if res, _ := last.Result(i, 0); !strings.Contains(res.Text, want) || strings.Contains(res.Text, "blocked") || strings.Contains(res.Text, "rejected") {
			t.Errorf("turn %d result = %q, want it to have run", i, res.Text)
		}
		pre := w.AuditFor(codexID(i))
		if len(pre) != 1 || pre[0].Event != "PreToolUse" || pre[0].Answer != "abstain" {
			t.Errorf("turn %d pre-tool audit = %+v, want one abstain", i, pre)
			continue
		}
		if i < len(perms) {
			p := perms[i]
			if p.Summary != pre[0].Summary || p.Answer != "allow" || !p.PromptAvoided {
				t.Errorf("turn %d permission request audit = %+v, want an allow of %q that avoided a prompt", i, p, pre[0].Summary)
			}
		}
	}
	mustExist(t, filepath.Join(w.Project, "notes.txt"), "x\n")
	mustExist(t, filepath.Join(w.Project, "main.go"), "")
	if recs := w.AuditFor(codexID(3)); len(recs) != 1 || recs[0].Event != "PreToolUse" || recs[0].Outcome != "ask" {
		t.Errorf("rm audit = %+v, want one refusal at PreToolUse and no permission request", recs)
	}
	recs := checkAgentMetrics(t, w, "codex", 7)
	avoided := 0
	for _, r := range recs {
		if r.PromptAvoided {
			avoided++
		}
	}
	if avoided != 3 {
		t.Errorf("%d prompts avoided in the audit, want 3", avoided)
	}
	for _, r := range w.Model.Requests("") {
		if r.Scenario != sc.Name {
			t.Errorf("a request outside the scenario reached the model (Codex's own reviewer?): %s %s", r.Path, r.Body)
		}
	}
}
