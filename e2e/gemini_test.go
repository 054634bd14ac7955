package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// geminiClient is Google's Gemini CLI, the release real-clients.md §2 was
// verified against.
var geminiClient = npmClient{Pkg: "@google/gemini-cli", Version: "0.61.0", Bin: "gemini"}

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

// geminiDriver is Gemini CLI to the shared scenarios (agents_test.go).
// Its payloads carry no tool-call id: its audit records are matched by
// order (geminiOutcomes).
var geminiDriver = driver{
	name: "gemini", client: geminiClient, run: runGemini,
	// The user's Gemini settings: API-key auth, no telemetry or update
	// checks.
	setup: func(w *World) {
		w.Model.HandleGemini()
		w.WriteFile(filepath.Join(w.Home, ".gemini", "settings.json"), `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "telemetry": {"enabled": false}
}
`)
	},
	shell: gshell,
	read: func(file string) ToolCall {
		return gcall("read_file", map[string]string{"file_path": "{{CWD}}/" + file})
	},
	write: func(file, content string) ToolCall {
		return gcall("write_file", map[string]string{"file_path": "{{CWD}}/" + file, "content": content})
	},
	// Gemini reports a hook's exit-2 block with the hook's stderr.
	blocked: geminiBlocked, hookFailed: "", marksErrors: true,
	settings:     func(w *World) string { return filepath.Join(w.Home, ".gemini", "settings.json") },
	keep:         "gemini-api-key",
	wantOutcomes: geminiOutcomes,
}

func TestGeminiHarmlessRead(t *testing.T) { testHarmlessRead(t, geminiDriver) }

// TestGeminiWorkspaceWrite: a headless Gemini cannot ask, so strict's ask
// is a deny. Besides the new file, replace edits one.
func TestGeminiWorkspaceWrite(t *testing.T) {
	testWorkspaceWrite(t, geminiDriver, writeStep{
		call: gcall("replace", map[string]string{"file_path": "{{CWD}}/README.md",
			"old_string": "hello world", "new_string": "hello edited", "instruction": "edit the greeting"}),
		file: "README.md", before: "hello world\nsecond line\n", after: "hello edited\nsecond line\n",
	})
}

// TestGeminiDangerousNeverRuns adds web_fetch, which hides its URL in the
// prompt text, and read_file of a secret inside the workspace (narrowd's
// sensitive names). Outside the workspace Gemini refuses the path itself,
// before any hook runs.
func TestGeminiDangerousNeverRuns(t *testing.T) {
	testDangerousNeverRuns(t, geminiDriver, []ToolCall{
		gcall("web_fetch", map[string]string{"prompt": "summarize {{SINK}}/page"}),
		gcall("read_file", map[string]string{"file_path": "{{CWD}}/deploy.pem"}),
	}, []ToolCall{gcall("read_file", map[string]string{"file_path": "{{HOME}}/.ssh/id_rsa"})})
}

// TestGeminiAskNeverRuns: Gemini waits forever for a person when a hook
// answers ask, even in a run with no person (real-clients.md §2).
func TestGeminiAskNeverRuns(t *testing.T) { testAskNeverRuns(t, geminiDriver) }

func TestGeminiDaemonStopped(t *testing.T) { testDaemonStopped(t, geminiDriver) }

func TestGeminiSessionTaint(t *testing.T) {
	clean, tainted := taintScenarios(geminiToolNames)
	testSessionTaint(t, geminiDriver, clean, tainted)
}

func TestGeminiInstallLevels(t *testing.T) { testInstallLevels(t, geminiDriver) }

func TestGeminiParallelCalls(t *testing.T) { testParallelCalls(t, geminiDriver) }

func TestGeminiSandbox(t *testing.T) { testSandbox(t, geminiDriver) }

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

// geminiOutcomes checks the pre-tool audit records against the calls of
// sc: one record per call, turn by turn in order; within a turn of
// several calls in any order, each with its call's tool and outcome.
func geminiOutcomes(t *testing.T, w *World, sc Scenario, outcomes ...string) {
	t.Helper()
	recs := preTool(w)
	if n := len(callsOf(sc)); len(recs) != n || len(outcomes) != n {
		t.Errorf("pre-tool audit records: %d, want %d (%d outcomes given): %+v", len(recs), n, len(outcomes), recs)
		return
	}
	k := 0
	for turn, tu := range sc.Turns {
		got, used := recs[k:k+len(tu.Calls)], make([]bool, len(tu.Calls))
		for i, c := range tu.Calls {
			found := false
			for j, r := range got {
				if !used[j] && r.ToolName == c.Name && outcomeIs(r.Outcome, outcomes[k+i]) {
					used[j], found = true, true
					break
				}
			}
			if !found {
				t.Errorf("turn %d: no pre-tool record of %s with outcome %s among %+v", turn, c.Name, outcomes[k+i], got)
			}
		}
		k += len(tu.Calls)
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
			w, bin := geminiDriver.world(t, WorldOptions{Profile: profile})
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
