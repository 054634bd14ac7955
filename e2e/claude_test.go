package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// claudeTools are the tools the runs offer: the default build lacks Glob
// and Grep and defers WebFetch (real-clients.md §1).
const claudeTools = "Bash,Read,Write,Edit,Glob,Grep,WebFetch"

// claudeOutput is Claude Code's --output-format json result.
type claudeOutput struct {
	Result            string `json:"result"`
	IsError           bool   `json:"is_error"`
	NumTurns          int    `json:"num_turns"`
	PermissionDenials []struct {
		ToolName  string `json:"tool_name"`
		ToolUseID string `json:"tool_use_id"`
		ToolInput any    `json:"tool_input"`
	} `json:"permission_denials"`
}

// claudeWorld is a world with the Anthropic dialect and Claude Code.
func claudeWorld(t *testing.T, opt WorldOptions) (*World, string) {
	t.Helper()
	bin := needClient(t, claudeClient)
	w := NewWorld(t, opt)
	w.Model.HandleAnthropic()
	return w, bin
}

// runClaude runs Claude Code headless on one scenario in the project and
// returns its JSON result. A run that fails or times out fails the test.
func runClaude(t *testing.T, w *World, bin string, sc Scenario) claudeOutput {
	t.Helper()
	w.Model.Add(sc)
	debug := filepath.Join(w.Root, "claude-debug-"+sc.Name+".txt")
	res := w.Exec(Run{
		Bin: bin,
		Args: []string{"-p", "SCENARIO=" + sc.Name + " CWD=" + w.Project + " go",
			"--output-format", "json", "--tools", claudeTools, "--debug-file", debug},
		Env: []string{
			"ANTHROPIC_BASE_URL=" + w.Model.URL(),
			"ANTHROPIC_API_KEY=dummy",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1",
		},
		Timeout: 90 * time.Second,
	})
	t.Logf("claude %s: %v in %v", sc.Name, res.Err, res.Duration.Round(time.Millisecond))
	if res.Err != nil {
		t.Fatalf("claude run %s: %v\nstdout: %s\nstderr: %s\ndebug log: %s", sc.Name, res.Err, res.Stdout, res.Stderr, debug)
	}
	var out claudeOutput
	if err := json.Unmarshal([]byte(lastJSONLine(res.Stdout)), &out); err != nil {
		t.Fatalf("claude printed no JSON result: %v\n%s", err, res.Stdout)
	}
	return out
}

// lastJSONLine is the last line of s that starts with '{'.
func lastJSONLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "{") {
			return lines[i]
		}
	}
	return s
}

// claudeSpec describes Claude Code to the probes and metrics checks.
var claudeSpec = clientSpec{
	agent: "claude", preEvent: "PreToolUse", permEvent: "PermissionRequest",
	// Headless Claude runs read-only calls by its own rules and would ask
	// about writes.
	asks: func(p probe) bool { return p.writes },
	payload: func(w *World, tool string, input json.RawMessage, id string) any {
		return map[string]any{
			"session_id": "e2e-check", "transcript_path": filepath.Join(w.Root, "check.jsonl"),
			"cwd": w.Project, "hook_event_name": "PreToolUse", "permission_mode": "default",
			"tool_name": tool, "tool_input": input, "tool_use_id": "toolu_" + id,
		}
	},
}

// allProbes is the scenario every client runs: harmless reads, workspace
// writes, calls that must never run, and a call the profiles ask about.
func allProbes(n toolNames, pe *probeEnv) []probe {
	return []probe{
		probeLs(n), probeRead(n), probeWrite(n), probeEdit(n),
		probeTouchOutside(n), probeRmOutside(n), probeCurl(n, pe), probeSSHKey(n),
	}
}

// TestClaudeHooks runs every probe through Claude Code with narrowd's
// command hook (the shim over the Unix socket) and with its http hook
// (straight to the daemon), installed at user and at project level, under
// the standard profile and under readonly, where the workspace writes must
// not run. It then checks the
// metrics against what the probes did.
func TestClaudeHooks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, profile string
		http, project bool
	}{
		{"command-standard", "standard", false, false},
		{"http-standard", "standard", true, false},
		{"project-command-readonly", "readonly", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, bin := claudeWorld(t, WorldOptions{Profile: tc.profile})
			via := "socket"
			switch {
			case tc.http:
				w.Install("claude", "--http", w.HTTPAddr)
				via = "http"
			case tc.project:
				w.Install("claude", "--project", w.Project)
			default:
				w.Install("claude")
			}
			w.Start()
			pe := newProbeEnv(t, w)
			ps := allProbes(claudeToolNames, pe)
			sc := scenarioOf("probes", ps)
			out := runClaude(t, w, bin, sc)
			outs := checkProbes(t, w, claudeSpec, sc, ps, via)
			mustExist(t, w.MarkerFile, "")
			if hits := pe.sink.Hits(); len(hits) > 0 {
				t.Errorf("the sink got requests: %v", hits)
			}
			asked, writesAllowed := false, 0
			for _, o := range outs {
				asked = asked || o.outcome == "ask"
				if o.probe.writes && o.outcome == "allow" {
					writesAllowed++
				}
			}
			if !asked {
				t.Errorf("no probe got ask under %s: the ask case is not exercised", tc.profile)
			}
			// The profiles differ exactly here: standard allows proven
			// workspace writes, readonly does not.
			if wantWrites := map[string]int{"standard": 2, "readonly": 0}[tc.profile]; writesAllowed != wantWrites {
				t.Errorf("%d workspace writes allowed under %s, want %d", writesAllowed, tc.profile, wantWrites)
			}
			denied := 0
			for _, o := range outs {
				if o.outcome != "allow" {
					denied++
				}
			}
			if len(out.PermissionDenials) != denied {
				t.Errorf("claude lists %d permission denials, narrowd refused %d calls: %+v", len(out.PermissionDenials), denied, out.PermissionDenials)
			}
			checkMetrics(t, w, claudeSpec, outs)
		})
	}
}

// TestClaudeSessionTaint: after Claude Code reads a project file (text
// written by others), a curl that the same profile allows in a clean
// session is refused.
func TestClaudeSessionTaint(t *testing.T) {
	t.Parallel()
	w, bin := claudeWorld(t, WorldOptions{ProfileTOML: taintProfile})
	w.Install("claude")
	w.Start()
	pe := newProbeEnv(t, w)
	clean, tainted := taintScenarios(claudeToolNames)
	runClaude(t, w, bin, clean)
	runClaude(t, w, bin, tainted)
	checkTaint(t, w, pe, tainted)
}

// TestClaudeDaemonDown stops the daemon before Claude Code runs. The
// command hook judges in-process with the same profile: what the profile
// allows runs, nothing else does. The http hook has nobody to ask and is
// installed with onFailure "block": nothing the profile would refuse runs.
func TestClaudeDaemonDown(t *testing.T) {
	t.Parallel()
	for _, http := range []bool{false, true} {
		name := map[bool]string{false: "command", true: "http"}[http]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, bin := claudeWorld(t, WorldOptions{})
			if http {
				w.Install("claude", "--http", w.HTTPAddr)
			} else {
				w.Install("claude")
			}
			w.Start()
			w.Stop()
			pe := newProbeEnv(t, w)
			n := claudeToolNames
			ps := []probe{probeLs(n), probeWrite(n), probeRmOutside(n), probeCurl(n, pe), probeSSHKey(n)}
			sc := scenarioOf("down", ps)
			runClaude(t, w, bin, sc)
			refusal := ""
			if http {
				// Nothing answers the http hook, which install wrote
				// with onFailure "block": every call is blocked.
				refusal = "block"
			}
			checkDaemonDown(t, w, claudeSpec, pe, ps, sc, http, refusal)
			if recs := w.Audit(); len(recs) != 0 {
				t.Logf("%d audit records written while the daemon was down (expected none)", len(recs))
			}
		})
	}
}
