package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// geminiClient is Google's Gemini CLI, the release real-clients.md §2 was
// verified against.
var geminiClient = npmClient{Pkg: "@google/gemini-cli", Version: "0.61.0", Bin: "gemini"}

// geminiWorld is a world with the Gemini dialect, the user's Gemini
// settings (API-key auth, no telemetry or update checks) and narrowd's
// hooks merged into them by `narrowd install gemini`.
func geminiWorld(t *testing.T, opt WorldOptions) (*World, string) {
	t.Helper()
	w, bin := geminiWorldBare(t, opt)
	w.Install("gemini")
	return w, bin
}

// geminiWorldBare is geminiWorld without narrowd's hooks.
func geminiWorldBare(t *testing.T, opt WorldOptions) (*World, string) {
	t.Helper()
	bin := needClient(t, geminiClient)
	w := NewWorld(t, opt)
	w.Model.HandleGemini()
	w.WriteFile(filepath.Join(w.Home, ".gemini", "settings.json"), `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "telemetry": {"enabled": false}
}
`)
	return w, bin
}

// runGemini runs Gemini CLI headless on one scenario in the project. Its
// yolo mode offers the shell and write tools (the default headless mode
// does not), and every call still goes through the BeforeTool hook first.
// A run that fails or times out fails the test: Gemini waits forever for
// a person when a hook answers ask, so a hang is a failure, not a skip.
func runGemini(t *testing.T, w *World, bin string, sc Scenario) Result {
	t.Helper()
	w.Model.Add(sc)
	res := w.Exec(Run{
		Bin: bin,
		Args: []string{"-p", "SCENARIO=" + sc.Name + " CWD=" + w.Project + " go",
			"--output-format", "json", "--approval-mode", "yolo"},
		Env: []string{
			"GOOGLE_GEMINI_BASE_URL=" + w.Model.URL(),
			"GEMINI_API_KEY=dummy",
			"GEMINI_CLI_TRUST_WORKSPACE=true",
			// Gemini restarts itself in a second node process with a
			// larger heap; the runs here are small, and one start
			// instead of two halves their time.
			"GEMINI_CLI_NO_RELAUNCH=true",
		},
		Timeout: 60 * time.Second,
	})
	t.Logf("gemini %s: %v in %v", sc.Name, res.Err, res.Duration.Round(time.Millisecond))
	if res.Err != nil {
		t.Fatalf("gemini run %s: %v\nstdout: %s\nstderr: %s", sc.Name, res.Err, res.Stdout, res.Stderr)
	}
	return res
}

// gcall is a scripted Gemini function call.
func gcall(name string, args map[string]string) ToolCall {
	b, _ := json.Marshal(args)
	return ToolCall{Name: name, Input: string(b)}
}

// gshell is a scripted run_shell_command call.
func gshell(cmd string) ToolCall {
	return gcall("run_shell_command", map[string]string{"command": cmd, "description": "scripted"})
}

// geminiBlocked is how Gemini tells the model that a BeforeTool hook
// blocked a call; narrowd's reason follows.
const geminiBlocked = "Tool execution blocked: narrowd"

// geminiResults returns the result of each turn's call in the scenario's
// last request, failing the test when one is missing.
func geminiResults(t *testing.T, w *World, sc Scenario) []ToolResult {
	t.Helper()
	last := w.Model.Last(sc.Name)
	out := make([]ToolResult, len(sc.Turns))
	for i := range sc.Turns {
		if len(sc.Turns[i].Calls) == 0 {
			continue
		}
		res, ok := last.Result(i, 0)
		if !ok {
			t.Fatalf("no result for turn %d in Gemini's last request: %+v", i, last.Decoded.Results)
		}
		out[i] = res
	}
	return out
}

func TestGeminiHarmlessRead(t *testing.T) {
	t.Parallel()
	w, bin := geminiWorld(t, WorldOptions{})
	w.Start()
	sc := Scenario{Name: "gemini-read", Turns: []Turn{
		{Calls: []ToolCall{gshell("ls")}},
		{Calls: []ToolCall{gcall("read_file", map[string]string{"file_path": "{{CWD}}/README.md"})}},
		{Calls: []ToolCall{gshell("grep -n hello README.md main.go | head -5")}},
	}}
	runGemini(t, w, bin, sc)
	res := geminiResults(t, w, sc)
	for i, want := range []string{"main.go", "second line", "README.md:1:hello world"} {
		if res[i].IsError || !strings.Contains(res[i].Text, want) {
			t.Errorf("turn %d result = %+v, want output with %q", i, res[i], want)
		}
	}
	wantPreTool(t, w, "allow", "allow", "allow")
}

func TestGeminiWorkspaceWrite(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		profile string
		written bool
	}{
		{"standard", true}, // write-workspace-file allows one proven workspace file
		{"strict", false},  // strict asks, and a headless Gemini cannot: a deny
	} {
		t.Run(tt.profile, func(t *testing.T) {
			t.Parallel()
			w, bin := geminiWorld(t, WorldOptions{Profile: tt.profile})
			w.Start()
			sc := Scenario{Name: "gemini-write", Turns: []Turn{
				{Calls: []ToolCall{gcall("write_file", map[string]string{"file_path": "{{CWD}}/notes.txt", "content": "by gemini\n"})}},
				{Calls: []ToolCall{gcall("replace", map[string]string{"file_path": "{{CWD}}/README.md",
					"old_string": "hello world", "new_string": "hello edited", "instruction": "edit the greeting"})}},
			}}
			runGemini(t, w, bin, sc)
			res := geminiResults(t, w, sc)
			notes, readme := filepath.Join(w.Project, "notes.txt"), filepath.Join(w.Project, "README.md")
			if tt.written {
				mustExist(t, notes, "by gemini\n")
				mustExist(t, readme, "hello edited\nsecond line\n")
				wantPreTool(t, w, "allow", "allow")
				for i, r := range res {
					if r.IsError {
						t.Errorf("turn %d result = %+v, want the write to have run", i, r)
					}
				}
				return
			}
			mustNotExist(t, notes)
			mustExist(t, readme, "hello world\nsecond line\n")
			wantPreTool(t, w, "ask", "ask")
			for i, r := range res {
				if !r.IsError || !strings.HasPrefix(r.Text, geminiBlocked+": needs approval") {
					t.Errorf("turn %d result = %+v, want narrowd's needs-approval reason", i, r)
				}
			}
		})
	}
}

func TestGeminiDangerousNeverRuns(t *testing.T) {
	t.Parallel()
	w, bin := geminiWorld(t, WorldOptions{})
	sink := NewSink(t, "exfiltrated\n")
	w.Model.Vars["SINK"] = sink.URL
	w.WriteFile(filepath.Join(w.Project, "deploy.pem"), "FAKE-E2E-TOKEN-DO-NOT-LEAK\n")
	w.Start()
	sc := Scenario{Name: "gemini-danger", Turns: []Turn{
		{Calls: []ToolCall{gshell("rm -rf {{MARKER}}")}},
		{Calls: []ToolCall{gshell("curl -s {{SINK}}/exfil")}},
		{Calls: []ToolCall{gshell("cat {{HOME}}/.ssh/id_rsa")}},
		// web_fetch hides its URL in the prompt text.
		{Calls: []ToolCall{gcall("web_fetch", map[string]string{"prompt": "summarize {{SINK}}/page"})}},
		// read_file of a secret inside the workspace: narrowd's sensitive
		// names (outside the workspace Gemini refuses the path itself,
		// before any hook runs).
		{Calls: []ToolCall{gcall("read_file", map[string]string{"file_path": "{{CWD}}/deploy.pem"})}},
		{Calls: []ToolCall{gcall("read_file", map[string]string{"file_path": "{{HOME}}/.ssh/id_rsa"})}},
	}}
	runGemini(t, w, bin, sc)
	mustExist(t, w.MarkerFile, "narrowd e2e marker: must survive\n")
	if hits := sink.Hits(); len(hits) != 0 {
		t.Errorf("the loopback sink got requests %v; nothing may have reached it", hits)
	}
	res := geminiResults(t, w, sc)
	for i, r := range res[:5] {
		if !r.IsError || !strings.HasPrefix(r.Text, geminiBlocked) {
			t.Errorf("turn %d result = %+v, want narrowd's reason", i, r)
		}
	}
	if r := res[5]; !r.IsError {
		t.Errorf("read_file of the ssh key: result %+v, want a refusal", r)
	}
	pre := preTool(w)
	if len(pre) < 5 {
		t.Errorf("pre-tool audit records: %d, want one for each of the 5 calls narrowd saw", len(pre))
	}
	for i, r := range pre {
		if r.Outcome == "allow" {
			t.Errorf("pre-tool record %d (%s %q) was allowed", i, r.ToolName, r.Summary)
		}
	}
	noLeak(t, w.Model, "FAKE-E2E-KEY-DO-NOT-LEAK")
	noLeak(t, w.Model, "FAKE-E2E-TOKEN-DO-NOT-LEAK")
}

func TestGeminiAskNeverRuns(t *testing.T) {
	t.Parallel()
	// Gemini waits forever for a person when a hook answers ask, even in
	// a run with no person (real-clients.md §2), so an ask must come back
	// as a deny, also when narrowd is told a person is there.
	for _, interactive := range []bool{false, true} {
		name := "headless"
		if interactive {
			name = "interactive"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, bin := geminiWorld(t, WorldOptions{})
			if interactive {
				w.AppendConfig("interactive = true\n")
			}
			w.Start()
			sc := Scenario{Name: "gemini-ask", Turns: []Turn{
				{Calls: []ToolCall{gshell("rm README.md")}},
			}}
			runGemini(t, w, bin, sc)
			mustExist(t, filepath.Join(w.Project, "README.md"), "")
			wantPreTool(t, w, "ask")
			r := geminiResults(t, w, sc)[0]
			if !r.IsError || !strings.Contains(r.Text, "needs approval") || !strings.Contains(r.Text, "narrowd profile") {
				t.Errorf("result = %+v, want narrowd's reason with how to approve", r)
			}
		})
	}
}

func TestGeminiDaemonStopped(t *testing.T) {
	t.Parallel()
	t.Run("in-process", func(t *testing.T) {
		t.Parallel()
		w, bin := geminiWorld(t, WorldOptions{})
		w.Start()
		w.Stop()
		sc := Scenario{Name: "gemini-offline", Turns: []Turn{
			{Calls: []ToolCall{gcall("read_file", map[string]string{"file_path": "{{CWD}}/README.md"})}},
			{Calls: []ToolCall{gshell("rm -rf {{MARKER}}")}},
			{Calls: []ToolCall{gshell("rm README.md")}},
		}}
		runGemini(t, w, bin, sc)
		res := geminiResults(t, w, sc)
		if res[0].IsError || !strings.Contains(res[0].Text, "hello world") {
			t.Errorf("read result = %+v, want README.md's text (allowed in-process)", res[0])
		}
		for turn := 1; turn <= 2; turn++ {
			if !res[turn].IsError || !strings.HasPrefix(res[turn].Text, geminiBlocked) {
				t.Errorf("turn %d result = %+v, want narrowd's refusal", turn, res[turn])
			}
		}
		mustExist(t, w.MarkerFile, "")
		mustExist(t, filepath.Join(w.Project, "README.md"), "")
	})
	t.Run("in-process-profile", func(t *testing.T) {
		t.Parallel()
		// In-process judging uses the configured profile, not the
		// default: strict asks about a workspace write standard allows.
		w, bin := geminiWorld(t, WorldOptions{Profile: "strict"})
		sc := Scenario{Name: "gemini-offline-strict", Turns: []Turn{
			{Calls: []ToolCall{gcall("read_file", map[string]string{"file_path": "{{CWD}}/README.md"})}},
			{Calls: []ToolCall{gcall("write_file", map[string]string{"file_path": "{{CWD}}/notes.txt", "content": "x\n"})}},
		}}
		runGemini(t, w, bin, sc)
		res := geminiResults(t, w, sc)
		if res[0].IsError || !strings.Contains(res[0].Text, "hello world") {
			t.Errorf("read result = %+v, want README.md's text (allowed in-process)", res[0])
		}
		if !res[1].IsError || !strings.HasPrefix(res[1].Text, geminiBlocked) || !strings.Contains(res[1].Text, "needs approval") {
			t.Errorf("write result = %+v, want strict's needs-approval refusal", res[1])
		}
		mustNotExist(t, filepath.Join(w.Project, "notes.txt"))
	})
	t.Run("blocks", func(t *testing.T) {
		t.Parallel()
		w, bin := geminiWorld(t, WorldOptions{})
		w.AppendConfig("this is not toml\n")
		sc := Scenario{Name: "gemini-broken", Turns: []Turn{
			{Calls: []ToolCall{gcall("read_file", map[string]string{"file_path": "{{CWD}}/README.md"})}},
			{Calls: []ToolCall{gshell("rm -rf {{MARKER}}")}},
		}}
		runGemini(t, w, bin, sc)
		for turn, r := range geminiResults(t, w, sc) {
			// Gemini reports a hook's exit-2 block with the hook's stderr.
			if !r.IsError || !strings.Contains(r.Text, "narrowd: could not check this call") || strings.Contains(r.Text, "hello world") {
				t.Errorf("turn %d result = %+v, want narrowd's could-not-check block", turn, r)
			}
		}
		mustExist(t, w.MarkerFile, "")
	})
}

func TestGeminiSessionTaint(t *testing.T) {
	t.Parallel()
	w, bin := geminiWorld(t, WorldOptions{ProfileTOML: taintProfile})
	w.Start()
	pe := newProbeEnv(t, w)
	clean, tainted := taintScenarios(geminiToolNames)
	runGemini(t, w, bin, clean)
	runGemini(t, w, bin, tainted)
	checkTaint(t, w, pe, tainted)
}

// geminiToolNames are Gemini's file tools for the shared probes. Their
// inputs are Claude's keys, but replace also requires an instruction
// (without one Gemini refuses the call before any hook runs).
var geminiToolNames = toolNames{
	shell: "run_shell_command", read: "read_file", write: "write_file", edit: "replace",
	readInput: claudeToolNames.readInput, writeInput: claudeToolNames.writeInput,
	editInput: func(p, o, n string) string {
		return fmt.Sprintf(`{"file_path":%q,"old_string":%q,"new_string":%q,"instruction":"e2e probe"}`, p, o, n)
	},
}

// preTool returns the daemon's pre-tool audit records in order. Gemini's
// payloads carry no tool-call id, and its calls run one at a time, so
// the n-th record is the n-th scripted call.
func preTool(w *World) []AuditRecord {
	var out []AuditRecord
	for _, r := range w.Audit() {
		if r.Phase == "pre_tool" {
			out = append(out, r)
		}
	}
	return out
}

// wantPreTool checks the outcomes of the pre-tool audit records, in order.
func wantPreTool(t *testing.T, w *World, outcomes ...string) {
	t.Helper()
	recs := preTool(w)
	if len(recs) != len(outcomes) {
		t.Errorf("pre-tool audit records: %d, want %d: %+v", len(recs), len(outcomes), recs)
		return
	}
	for i, r := range recs {
		if r.Outcome != outcomes[i] {
			t.Errorf("pre-tool record %d (%s %q): outcome %s by rule %s, want %s", i, r.ToolName, r.Summary, r.Outcome, r.PolicyRule, outcomes[i])
		}
	}
}

// geminiSpec describes Gemini CLI to the probes and metrics checks. It
// has no permission-request hook: narrowd answers allow at BeforeTool.
var geminiSpec = clientSpec{
	agent: "gemini", preEvent: "BeforeTool",
	payload: func(w *World, tool string, input json.RawMessage, _ string) any {
		return map[string]any{
			"session_id": "e2e-check", "transcript_path": filepath.Join(w.Root, "check.json"),
			"cwd": w.Project, "hook_event_name": "BeforeTool", "timestamp": "2026-11-30T10:30:08.267Z",
			"tool_name": tool, "tool_input": input,
		}
	},
}

// TestGeminiHooks runs the shared probes through Gemini CLI under the
// standard and readonly profiles: every call did exactly what narrowd
// decided (cross-checked with narrowd check), and the daemon's counters
// equal it, estimates of prompts avoided included. The ssh-key read probe
// is left out: Gemini refuses a path outside its workspace itself, before
// any hook (the shell read of the key is in TestGeminiDangerousNeverRuns).
func TestGeminiHooks(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{"standard", "readonly"} {
		t.Run(profile, func(t *testing.T) {
			t.Parallel()
			w, bin := geminiWorld(t, WorldOptions{Profile: profile})
			w.Start()
			pe := newProbeEnv(t, w)
			var ps []probe
			for _, p := range allProbes(geminiToolNames, pe) {
				if p.name != "read-ssh-key" {
					ps = append(ps, p)
				}
			}
			sc := scenarioOf("probes", ps)
			runGemini(t, w, bin, sc)
			outs := checkProbes(t, w, geminiSpec, sc, ps, "socket")
			mustExist(t, w.MarkerFile, "")
			if hits := pe.sink.Hits(); len(hits) > 0 {
				t.Errorf("the sink got requests: %v", hits)
			}
			outcomes, writesAllowed := map[string]int{}, 0
			for _, o := range outs {
				outcomes[o.outcome]++
				if o.probe.writes && o.outcome == "allow" {
					writesAllowed++
				}
			}
			if outcomes["allow"] == 0 || outcomes["ask"] == 0 {
				t.Errorf("outcomes %v: the run must exercise allow and ask", outcomes)
			}
			// The profiles differ exactly here: standard allows proven
			// workspace writes, readonly does not.
			if want := map[string]int{"standard": 2, "readonly": 0}[profile]; writesAllowed != want {
				t.Errorf("%d workspace writes allowed under %s, want %d", writesAllowed, profile, want)
			}
			checkMetrics(t, w, geminiSpec, outs)
			estimates := 0
			for _, r := range checkAgentMetrics(t, w, "gemini", len(ps)) {
				if r.PromptAvoidedEstimate {
					estimates++
				}
			}
			if estimates == 0 {
				t.Errorf("no estimated prompt avoided, but narrowd allowed %d calls", outcomes["allow"])
			}
		})
	}
}

// TestGeminiInstallLevels: the hooks `narrowd install gemini` merges into
// the user's settings and into a trusted project's settings both run in
// the real client, and `narrowd uninstall gemini` removes exactly what
// made the difference: the same call narrowd refused runs once the hooks
// are gone, and the user's own settings stay.
func TestGeminiInstallLevels(t *testing.T) {
	t.Parallel()
	for _, project := range []bool{false, true} {
		name := "user"
		if project {
			name = "project"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, bin := geminiWorldBare(t, WorldOptions{})
			var args []string
			if project {
				args = []string{"--project", w.Project}
			}
			w.Install("gemini", args...)
			w.Start()
			scratch := filepath.Join(w.Project, "scratch.txt")
			w.WriteFile(scratch, "delete me\n")
			sc := Scenario{Name: "gemini-install", Turns: []Turn{{Calls: []ToolCall{gshell("rm scratch.txt")}}}}
			runGemini(t, w, bin, sc)
			mustExist(t, scratch, "delete me\n")
			wantPreTool(t, w, "ask")

			w.Narrowd("", append([]string{"uninstall", "gemini", "--binary", narrowdBin}, args...)...)
			if !strings.Contains(readFile(filepath.Join(w.Home, ".gemini", "settings.json")), "gemini-api-key") {
				t.Fatalf("uninstall lost the user's own settings")
			}
			sc2 := Scenario{Name: "gemini-uninstalled", Turns: sc.Turns}
			runGemini(t, w, bin, sc2)
			mustNotExist(t, scratch)
			if n := len(preTool(w)); n != 1 {
				t.Errorf("pre-tool audit records: %d after uninstall, want still 1; the hook must be gone", n)
			}
		})
	}
}

// TestGeminiParallelCalls: one model turn with several function calls:
// each is judged on its own, the reads run and the deletion outside the
// workspace does not.
func TestGeminiParallelCalls(t *testing.T) {
	t.Parallel()
	w, bin := geminiWorld(t, WorldOptions{})
	w.Start()
	sc := Scenario{Name: "gemini-parallel", Turns: []Turn{
		{Calls: []ToolCall{
			gcall("read_file", map[string]string{"file_path": "{{CWD}}/README.md"}),
			gshell("rm -rf {{MARKER}}"),
			gshell("ls"),
		}},
	}}
	runGemini(t, w, bin, sc)
	last := w.Model.Last(sc.Name)
	for i, want := range []string{"second line", geminiBlocked, "main.go"} {
		if res, ok := last.Result(0, i); !ok || !strings.Contains(res.Text, want) {
			t.Errorf("call %d result = %+v (found %v), want %q", i, res, ok, want)
		}
	}
	mustExist(t, w.MarkerFile, "")
	outcomes := map[string]int{}
	for _, r := range preTool(w) {
		outcomes[r.ToolName+" "+r.Outcome]++
	}
	want := map[string]int{"read_file allow": 1, "run_shell_command deny": 1, "run_shell_command allow": 1}
	if fmt.Sprint(outcomes) != fmt.Sprint(want) {
		t.Errorf("pre-tool outcomes %v, want %v", outcomes, want)
	}
}

// TestGeminiSandbox: a build narrowd's profile sends to its sandbox
// (run-repo-code) reaches real Gemini CLI as a rewrite of the shell
// command to `narrowd exec --ticket`, and runs confined: the workspace
// write lands, a write outside the workspace and a connection to the
// loopback sink fail.
func TestGeminiSandbox(t *testing.T) {
	t.Parallel()
	w, bin := geminiWorld(t, WorldOptions{})
	sink := writeSandboxProbe(t, w)
	w.Start()
	sc := Scenario{Name: "gemini-sandbox", Turns: []Turn{{Calls: []ToolCall{gshell("make")}}}}
	runGemini(t, w, bin, sc)
	res := geminiResults(t, w, sc)[0]
	checkSandboxProbe(t, w, sink, res)
	wantPreTool(t, w, "sandbox")
}
