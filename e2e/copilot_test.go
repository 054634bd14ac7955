package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrowd/narrowd/internal/npmcache"
)

// copilotCacheDir is the shared $COPILOT_CACHE_HOME: the npm loader
// unpacks the client there on first start, once for every test.
func copilotCacheDir(bin string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(bin))), "copilot-cache")
}

// warmCopilot starts Copilot once so that it unpacks into the shared cache.
func warmCopilot(bin string) error {
	home, err := os.MkdirTemp("", "nde2e-copilot-warm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	cmd := exec.Command(bin, "--version")
	cmd.Env = []string{"PATH=" + nodePath(), "HOME=" + home, "COPILOT_CACHE_HOME=" + copilotCacheDir(bin),
		"COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false", "TERM=dumb"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, npmcache.LastLines(string(out), 5))
	}
	return nil
}

// copilotSpec describes Copilot CLI to the probes and metrics checks. Its
// camelCase payloads name no event; narrowd's hook command says which
// event it serves (--event), and the audit records that name.
var copilotSpec = clientSpec{
	agent: "copilot", preEvent: "preToolUse", permEvent: "permissionRequest",
	// Copilot without --allow-all-tools asks about every shell command
	// and every write; it views files without asking.
	asks: func(p probe) bool { return p.call.Name != "view" },
	// Its permissionRequest names create as edit {file_path, diff}.
	permTool: map[string]string{"create": "edit"},
	payload: func(w *World, tool string, input json.RawMessage, id string) any {
		return map[string]any{
			"sessionId": "e2e-check", "timestamp": time.Now().UnixMilli(), "cwd": w.Project,
			"toolName": tool, "toolArgs": input,
		}
	},
}

// copilotWorld is a world with the Anthropic dialect (Copilot's BYOK
// provider type anthropic) and Copilot CLI.
func copilotWorld(t *testing.T, opt WorldOptions) (*World, string) {
	t.Helper()
	bin := needClient(t, copilotClient)
	w := NewWorld(t, opt)
	w.Model.HandleAnthropic()
	return w, bin
}

// runCopilot runs Copilot CLI headless on one scenario in the project,
// without --allow-all-tools: only narrowd's hooks let a call run.
func runCopilot(t *testing.T, w *World, bin string, sc Scenario) Result {
	t.Helper()
	w.Model.Add(sc)
	res := w.Exec(Run{
		Bin:  bin,
		Args: []string{"-p", "SCENARIO=" + sc.Name + " CWD=" + w.Project + " go", "--trust-folder", "--disable-client-telemetry"},
		Env: []string{
			"COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false",
			"COPILOT_PROVIDER_TYPE=anthropic",
			"COPILOT_PROVIDER_BASE_URL=" + w.Model.URL(),
			"COPILOT_PROVIDER_API_KEY=dummy",
			"COPILOT_MODEL=claude-sonnet-4.5",
			"COPILOT_CACHE_HOME=" + copilotCacheDir(bin),
		},
		Timeout: 90 * time.Second,
	})
	t.Logf("copilot %s: %v in %v", sc.Name, res.Err, res.Duration.Round(time.Millisecond))
	if res.Err != nil {
		t.Fatalf("copilot run %s: %v\nstdout: %s\nstderr: %s", sc.Name, res.Err, res.Stdout, res.Stderr)
	}
	return res
}

// TestCopilotHooks runs every probe through Copilot CLI with narrowd's
// hooks installed at user level and at project level, under standard and
// readonly, then checks the metrics against what the probes did.
func TestCopilotHooks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, profile string
		project       bool
	}{
		{"user-standard", "standard", false},
		{"project-standard", "standard", true},
		{"user-readonly", "readonly", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, bin := copilotWorld(t, WorldOptions{Profile: tc.profile})
			if tc.project {
				w.Install("copilot", "--project", w.Project)
			} else {
				w.Install("copilot")
			}
			w.Start()
			pe := newProbeEnv(t, w)
			ps := allProbes(copilotToolNames, pe)
			sc := scenarioOf("probes", ps)
			res := runCopilot(t, w, bin, sc)
			outs := checkProbes(t, w, copilotSpec, sc, ps, "socket")
			if t.Failed() {
				t.Logf("copilot stdout:\n%s\nstderr:\n%s", res.Stdout, res.Stderr)
			}
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
			if wantWrites := map[string]int{"standard": 2, "readonly": 0}[tc.profile]; writesAllowed != wantWrites {
				t.Errorf("%d workspace writes allowed under %s, want %d", writesAllowed, tc.profile, wantWrites)
			}
			if !strings.Contains(res.Stdout, "✗") && len(outs) > 0 {
				t.Logf("copilot's transcript shows no refused call:\n%s", res.Stdout)
			}
			checkMetrics(t, w, copilotSpec, outs)
		})
	}
}

// TestCopilotSessionTaint: after Copilot CLI views a project file (text
// written by others), a curl that the same profile allows in a clean
// session is refused.
func TestCopilotSessionTaint(t *testing.T) {
	t.Parallel()
	w, bin := copilotWorld(t, WorldOptions{ProfileTOML: taintProfile})
	w.Install("copilot")
	w.Start()
	pe := newProbeEnv(t, w)
	clean, tainted := taintScenarios(copilotToolNames)
	runCopilot(t, w, bin, clean)
	runCopilot(t, w, bin, tainted)
	checkTaint(t, w, pe, tainted)
}

// TestCopilotDaemonDown stops the daemon before Copilot CLI runs: the
// command hook judges in-process with the same profile, so what the
// profile allows runs and nothing else does.
func TestCopilotDaemonDown(t *testing.T) {
	t.Parallel()
	w, bin := copilotWorld(t, WorldOptions{})
	w.Install("copilot")
	w.Start()
	w.Stop()
	pe := newProbeEnv(t, w)
	n := copilotToolNames
	ps := []probe{probeLs(n), probeWrite(n), probeRmOutside(n), probeCurl(n, pe), probeSSHKey(n)}
	sc := scenarioOf("down", ps)
	runCopilot(t, w, bin, sc)
	checkDaemonDown(t, w, copilotSpec, pe, ps, sc, false, "narrowd")
}
