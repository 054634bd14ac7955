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

// geminiToolNames are Gemini's file tools for the shared probes; their
// inputs are Claude's keys.
var geminiToolNames = toolNames{
	shell: "run_shell_command", read: "read_file", write: "write_file", edit: "replace",
	readInput: claudeToolNames.readInput, writeInput: claudeToolNames.writeInput, editInput: claudeToolNames.editInput,
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

// TestGeminiMetrics: after a scripted run of calls narrowd allows, asks
// about and denies, the daemon's counters equal its audit log, and every
// call did what its record says. Gemini has no permission-request hook, so
// narrowd answers allow at pre-tool time and counts an allow whose
// ceiling it would not have allowed as an estimated prompt avoided.
func TestGeminiMetrics(t *testing.T) {
	t.Parallel()
	w, bin := geminiWorld(t, WorldOptions{})
	sink := NewSink(t, "sink body\n")
	w.Model.Vars["SINK"] = sink.URL
	w.Start()
	type step struct {
		call ToolCall
		ran  func(res ToolResult) bool
	}
	steps := []step{
		{gshell("ls"), func(r ToolResult) bool { return strings.Contains(r.Text, "main.go") }},
		{gcall("read_file", map[string]string{"file_path": "{{CWD}}/README.md"}), func(r ToolResult) bool { return strings.Contains(r.Text, "second line") }},
		{gcall("write_file", map[string]string{"file_path": "{{CWD}}/metrics.txt", "content": "m\n"}), func(ToolResult) bool { return readFile(filepath.Join(w.Project, "metrics.txt")) != "" }},
		{gshell("rm main.go"), func(ToolResult) bool { return readFile(filepath.Join(w.Project, "main.go")) == "" }},
		{gshell("rm -rf {{MARKER}}"), func(ToolResult) bool { return readFile(w.MarkerFile) == "" }},
		{gshell("curl -s {{SINK}}/m"), func(ToolResult) bool { return len(sink.Hits()) > 0 }},
	}
	sc := Scenario{Name: "gemini-metrics"}
	for _, s := range steps {
		sc.Turns = append(sc.Turns, Turn{Calls: []ToolCall{s.call}})
	}
	runGemini(t, w, bin, sc)
	res := geminiResults(t, w, sc)
	recs := checkAgentMetrics(t, w, "gemini", len(steps))
	if len(recs) != len(steps) {
		return
	}
	outcomes := map[string]int{}
	estimates := 0
	for i, s := range steps {
		r := recs[i]
		outcomes[r.Outcome]++
		if r.PromptAvoidedEstimate {
			estimates++
		}
		if ran := s.ran(res[i]); ran != (r.Answer == "allow") {
			t.Errorf("turn %d: ran=%v, but narrowd answered %s (rule %s)", i, ran, r.Answer, r.PolicyRule)
		}
	}
	if outcomes["allow"] == 0 || outcomes["ask"] == 0 || outcomes["deny"] == 0 {
		t.Errorf("outcomes %v, want allows, asks and denies", outcomes)
	}
	if estimates == 0 {
		t.Errorf("no estimated prompt avoided, but narrowd allowed %d calls whose ceiling it asks about", outcomes["allow"])
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
