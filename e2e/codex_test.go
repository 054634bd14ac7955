package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// codexClient is OpenAI's Codex CLI, the release real-clients.md §4 was
// verified against.
var codexClient = npmClient{Pkg: "@openai/codex", Version: "0.169.0", Bin: "codex"}

// codexWorld is a world with the Responses dialect, Codex's config.toml
// pointing at it and narrowd's hooks installed by `narrowd install codex`.
// The config file is the user's: the provider, and the trust decision for
// the project (Codex runs hooks only in a trusted project, and only with
// --dangerously-bypass-hook-trust, which runCodex passes; that trust is
// the user's to give, not narrowd's). The hook entries must come from
// narrowd install, so the test proves the file it writes is one Codex
// reads.
func codexWorld(t *testing.T, opt WorldOptions) (*World, string) {
	t.Helper()
	w, bin := codexWorldBare(t, opt)
	w.Install("codex")
	return w, bin
}

// codexWorldBare is codexWorld without narrowd's hooks.
func codexWorldBare(t *testing.T, opt WorldOptions) (*World, string) {
	t.Helper()
	bin := needClient(t, codexClient)
	w := NewWorld(t, opt)
	w.Model.HandleOpenAI()
	writeCodexConfig(w, "never", "danger-full-access")
	return w, bin
}

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

func TestCodexHarmlessRead(t *testing.T) {
	t.Parallel()
	w, bin := codexWorld(t, WorldOptions{})
	w.Start()
	sc := Scenario{Name: "codex-read", Turns: []Turn{
		{Calls: []ToolCall{shell("ls")}},
		{Calls: []ToolCall{shell("cat README.md")}},
		{Calls: []ToolCall{shell("grep -n hello README.md main.go | head -5")}},
	}}
	runCodex(t, w, bin, sc)
	last := w.Model.Last(sc.Name)
	for i, want := range []string{"main.go", "second line", "README.md:1:hello world"} {
		res, ok := last.Result(i, 0)
		if !ok || !strings.Contains(res.Text, want) || strings.Contains(res.Text, "blocked") {
			t.Errorf("turn %d result = %+v (found %v), want output with %q", i, res, ok, want)
		}
		// Allowed at pre-tool with no prompt: narrowd abstains (Codex
		// treats a plain allow as an unsupported answer).
		wantAudit(t, w, codexID(i), "PreToolUse", "allow", "abstain")
	}
}

func TestCodexWorkspaceWrite(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		profile string
		written bool
	}{
		{"standard", true}, // write-workspace-file allows one proven workspace file
		{"strict", false},  // strict asks, and Codex cannot ask: a deny
	} {
		t.Run(tt.profile, func(t *testing.T) {
			t.Parallel()
			w, bin := codexWorld(t, WorldOptions{Profile: tt.profile})
			w.Start()
			sc := Scenario{Name: "codex-write", Turns: []Turn{
				{Calls: []ToolCall{shell("printf 'by codex\\n' > notes.txt")}},
			}}
			runCodex(t, w, bin, sc)
			res, _ := w.Model.Last(sc.Name).Result(0, 0)
			notes := filepath.Join(w.Project, "notes.txt")
			if tt.written {
				mustExist(t, notes, "by codex\n")
				wantAudit(t, w, codexID(0), "PreToolUse", "allow", "abstain")
				if strings.Contains(res.Text, "blocked") {
					t.Errorf("result = %q, want the write to have run", res.Text)
				}
				return
			}
			mustNotExist(t, notes)
			wantAudit(t, w, codexID(0), "PreToolUse", "ask", "")
			if !strings.Contains(res.Text, blockedByNarrowd+": needs approval") {
				t.Errorf("result = %q, want narrowd's needs-approval reason", res.Text)
			}
		})
	}
}

func TestCodexDangerousNeverRuns(t *testing.T) {
	t.Parallel()
	w, bin := codexWorld(t, WorldOptions{})
	sink := NewSink(t, "exfiltrated\n")
	w.Model.Vars["SINK"] = sink.URL
	w.Start()
	sc := Scenario{Name: "codex-danger", Turns: []Turn{
		{Calls: []ToolCall{shell("rm -rf {{MARKER}}")}},
		{Calls: []ToolCall{shell("curl -s {{SINK}}/exfil")}},
		{Calls: []ToolCall{shell("cat {{HOME}}/.ssh/id_rsa")}},
		{Calls: []ToolCall{shell("cat ~/.ssh/id_rsa")}},
	}}
	runCodex(t, w, bin, sc)
	mustExist(t, w.MarkerFile, "narrowd e2e marker: must survive\n")
	if hits := sink.Hits(); len(hits) != 0 {
		t.Errorf("the loopback sink got requests %v; curl must not have run", hits)
	}
	last := w.Model.Last(sc.Name)
	for i := range sc.Turns {
		res, ok := last.Result(i, 0)
		if !ok || !strings.HasPrefix(res.Text, blockedByNarrowd) {
			t.Errorf("turn %d result = %+v (found %v), want narrowd's reason", i, res, ok)
		}
		recs := w.AuditFor(codexID(i))
		if len(recs) == 0 || recs[0].Outcome == "allow" {
			t.Errorf("turn %d audit = %+v, want one refusal", i, recs)
		}
	}
	noLeak(t, w.Model, "FAKE-E2E-KEY-DO-NOT-LEAK")
}

func TestCodexAskNeverRuns(t *testing.T) {
	t.Parallel()
	// Codex cannot ask ("ask" is an unsupported answer, and an
	// unsupported answer lets the tool run), so an ask must come back as
	// a deny even when narrowd is told a person is there.
	for _, interactive := range []bool{false, true} {
		name := "headless"
		if interactive {
			name = "interactive"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, bin := codexWorld(t, WorldOptions{})
			if interactive {
				w.AppendConfig("interactive = true\n")
			}
			w.Start()
			sc := Scenario{Name: "codex-ask", Turns: []Turn{
				{Calls: []ToolCall{shell("rm README.md")}},
			}}
			runCodex(t, w, bin, sc)
			mustExist(t, filepath.Join(w.Project, "README.md"), "")
			wantAudit(t, w, codexID(0), "PreToolUse", "ask", "")
			res, _ := w.Model.Last(sc.Name).Result(0, 0)
			if !strings.Contains(res.Text, "needs approval") || !strings.Contains(res.Text, "narrowd profile") {
				t.Errorf("result = %q, want narrowd's reason with how to approve", res.Text)
			}
		})
	}
}

func TestCodexDaemonStopped(t *testing.T) {
	t.Parallel()
	t.Run("in-process", func(t *testing.T) {
		t.Parallel()
		w, bin := codexWorld(t, WorldOptions{})
		// The daemon ran once and is gone: the shim must judge in-process.
		w.Start()
		w.Stop()
		sc := Scenario{Name: "codex-offline", Turns: []Turn{
			{Calls: []ToolCall{shell("cat README.md")}},
			{Calls: []ToolCall{shell("rm -rf {{MARKER}}")}},
			{Calls: []ToolCall{shell("rm README.md")}},
		}}
		runCodex(t, w, bin, sc)
		last := w.Model.Last(sc.Name)
		if res, _ := last.Result(0, 0); !strings.Contains(res.Text, "hello world") {
			t.Errorf("read result = %q, want README.md's text (allowed in-process)", res.Text)
		}
		for turn := 1; turn <= 2; turn++ {
			if res, _ := last.Result(turn, 0); !strings.HasPrefix(res.Text, blockedByNarrowd) {
				t.Errorf("turn %d result = %q, want narrowd's refusal", turn, res.Text)
			}
		}
		mustExist(t, w.MarkerFile, "")
		mustExist(t, filepath.Join(w.Project, "README.md"), "")
	})
	t.Run("hung", func(t *testing.T) {
		t.Parallel()
		// The daemon is there but answers nothing (stopped with
		// SIGSTOP): the shim gives up after its timeout and must still
		// never let through what the profile would not allow.
		w, bin := codexWorld(t, WorldOptions{})
		w.Start()
		w.Signal(syscall.SIGSTOP)
		defer w.Signal(syscall.SIGCONT)
		sc := Scenario{Name: "codex-hung", Turns: []Turn{
			{Calls: []ToolCall{shell("cat README.md")}},
			{Calls: []ToolCall{shell("rm -rf {{MARKER}}")}},
		}}
		runCodex(t, w, bin, sc)
		last := w.Model.Last(sc.Name)
		// A read is judged in-process after the timeout (or blocked).
		if res, _ := last.Result(0, 0); !strings.Contains(res.Text, "hello world") && !strings.HasPrefix(res.Text, blockedByNarrowd) {
			t.Errorf("read result = %q, want README.md's text or narrowd's block", res.Text)
		}
		if res, _ := last.Result(1, 0); !strings.HasPrefix(res.Text, blockedByNarrowd) {
			t.Errorf("rm result = %q, want narrowd's refusal", res.Text)
		}
		mustExist(t, w.MarkerFile, "")
	})
	t.Run("in-process-profile", func(t *testing.T) {
		t.Parallel()
		// In-process judging uses the configured profile, not the
		// default: strict asks about a workspace write standard allows.
		w, bin := codexWorld(t, WorldOptions{Profile: "strict"})
		sc := Scenario{Name: "codex-offline-strict", Turns: []Turn{
			{Calls: []ToolCall{shell("cat README.md")}},
			{Calls: []ToolCall{shell("printf 'x\\n' > notes.txt")}},
		}}
		runCodex(t, w, bin, sc)
		last := w.Model.Last(sc.Name)
		if res, _ := last.Result(0, 0); !strings.Contains(res.Text, "hello world") {
			t.Errorf("read result = %q, want README.md's text (allowed in-process)", res.Text)
		}
		if res, _ := last.Result(1, 0); !strings.HasPrefix(res.Text, blockedByNarrowd) || !strings.Contains(res.Text, "needs approval") {
			t.Errorf("write result = %q, want strict's needs-approval refusal", res.Text)
		}
		mustNotExist(t, filepath.Join(w.Project, "notes.txt"))
	})
	t.Run("blocks", func(t *testing.T) {
		t.Parallel()
		w, bin := codexWorld(t, WorldOptions{})
		// No daemon, and a config the shim cannot read: it cannot judge,
		// so it must block even a harmless read.
		w.AppendConfig("this is not toml\n")
		sc := Scenario{Name: "codex-broken", Turns: []Turn{
			{Calls: []ToolCall{shell("cat README.md")}},
			{Calls: []ToolCall{shell("rm -rf {{MARKER}}")}},
		}}
		runCodex(t, w, bin, sc)
		last := w.Model.Last(sc.Name)
		for turn := range sc.Turns {
			res, _ := last.Result(turn, 0)
			if !strings.HasPrefix(res.Text, blockedByNarrowd) || !strings.Contains(res.Text, "narrowd: could not check this call") {
				t.Errorf("turn %d result = %q, want narrowd's could-not-check block", turn, res.Text)
			}
			if strings.Contains(res.Text, "hello world") {
				t.Errorf("turn %d ran: %q", turn, res.Text)
			}
		}
		mustExist(t, w.MarkerFile, "")
	})
}

// taintProfile allows everything except sending data out once text
// written by others entered the session: it isolates seed 003's rule, so
// the same egress call is allowed in a clean session and refused in a
// tainted one.
const taintProfile = `name = "e2e-taint"
description = "Everything runs, except sending data out after third-party content entered the session."

[[rule]]
id = "allow-all"
when = 'true'
then = "allow"
reason = "the e2e taint profile allows everything else"

[[rule]]
id = "no-send-after-read"
when = 'call.external_effect && session.called_with("reads_untrusted")'
then = "deny"
reason = "this call can send data out, and text written by others has entered this session"
`

func TestCodexSessionTaint(t *testing.T) {
	t.Parallel()
	w, bin := codexWorld(t, WorldOptions{ProfileTOML: taintProfile})
	w.Start()
	pe := newProbeEnv(t, w)
	// taintScenarios' shape with Codex's tools (exec_command takes cmd,
	// not command): a patch returns no third-party text and makes the
	// session known and clean; cat then brings a project file in.
	clean := Scenario{Name: "taint-control", Turns: []Turn{
		{Calls: []ToolCall{patch("*** Begin Patch\n*** Add File: clean.txt\n+note\n*** End Patch\n")}},
		{Calls: []ToolCall{shell("curl -s {{SINK}}/clean")}},
	}}
	tainted := Scenario{Name: "taint", Turns: []Turn{
		{Calls: []ToolCall{patch("*** Begin Patch\n*** Add File: tainted.txt\n+note\n*** End Patch\n")}},
		{Calls: []ToolCall{shell("cat README.md")}},
		{Calls: []ToolCall{shell("curl -s {{SINK}}/tainted")}},
	}}
	runCodex(t, w, bin, clean)
	runCodex(t, w, bin, tainted)
	checkTaint(t, w, pe, tainted)
}

func TestCodexApplyPatch(t *testing.T) {
	t.Parallel()
	w, bin := codexWorld(t, WorldOptions{})
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
	w, bin := codexWorld(t, WorldOptions{})
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

// TestCodexInstallLevels: the hooks `narrowd install codex` writes at user
// level and into a trusted project both run in the real client, and
// `narrowd uninstall codex` removes exactly what made the difference:
// the same call narrowd refused runs once the hooks are gone.
func TestCodexInstallLevels(t *testing.T) {
	t.Parallel()
	for _, project := range []bool{false, true} {
		name := "user"
		if project {
			name = "project"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, bin := codexWorldBare(t, WorldOptions{})
			var args []string
			if project {
				args = []string{"--project", w.Project}
			}
			w.Install("codex", args...)
			w.Start()
			scratch := filepath.Join(w.Project, "scratch.txt")
			w.WriteFile(scratch, "delete me\n")
			sc := Scenario{Name: "codex-install", Turns: []Turn{{Calls: []ToolCall{shell("rm scratch.txt")}}}}
			runCodex(t, w, bin, sc)
			mustExist(t, scratch, "delete me\n")
			wantAudit(t, w, codexID(0), "PreToolUse", "ask", "")

			w.Narrowd("", append([]string{"uninstall", "codex", "--binary", narrowdBin}, args...)...)
			before := len(w.Audit())
			sc2 := Scenario{Name: "codex-uninstalled", Turns: sc.Turns}
			runCodex(t, w, bin, sc2)
			mustNotExist(t, scratch)
			if after := len(w.Audit()); after != before {
				t.Errorf("audit records went from %d to %d after uninstall; the hook must be gone", before, after)
			}
		})
	}
}

// TestCodexParallelCalls: one model turn with several calls, which Codex
// may run (and hook) concurrently: each is judged on its own, the read
// runs and the deletion outside the workspace does not.
func TestCodexParallelCalls(t *testing.T) {
	t.Parallel()
	w, bin := codexWorld(t, WorldOptions{})
	w.Start()
	sc := Scenario{Name: "codex-parallel", Turns: []Turn{
		{Calls: []ToolCall{shell("cat README.md"), shell("rm -rf {{MARKER}}"), shell("ls")}},
	}}
	runCodex(t, w, bin, sc)
	last := w.Model.Last(sc.Name)
	for i, want := range []string{"second line", blockedByNarrowd, "main.go"} {
		if res, ok := last.Result(0, i); !ok || !strings.Contains(res.Text, want) {
			t.Errorf("call %d result = %+v (found %v), want %q", i, res, ok, want)
		}
	}
	mustExist(t, w.MarkerFile, "")
	for i, outcome := range []string{"allow", "deny", "allow"} {
		if recs := w.AuditFor("call_" + CallID(0, i)); len(recs) != 1 || recs[0].Outcome != outcome {
			t.Errorf("call %d audit = %+v, want one %s", i, recs, outcome)
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
	w, bin := codexWorld(t, WorldOptions{})
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

// TestCodexSandbox: a build narrowd's profile sends to its sandbox
// (run-repo-code) reaches real Codex as a rewrite to `narrowd exec
// --ticket`, and runs confined: the workspace write lands, a write
// outside the workspace and a connection to the loopback sink fail.
func TestCodexSandbox(t *testing.T) {
	t.Parallel()
	w, bin := codexWorld(t, WorldOptions{})
	sink := writeSandboxProbe(t, w)
	w.Start()
	sc := Scenario{Name: "codex-sandbox", Turns: []Turn{{Calls: []ToolCall{shell("make")}}}}
	runCodex(t, w, bin, sc)
	res, _ := w.Model.Last(sc.Name).Result(0, 0)
	checkSandboxProbe(t, w, sink, res)
	wantAudit(t, w, codexID(0), "PreToolUse", "sandbox", "sandbox")
}
