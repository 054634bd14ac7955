package daemon

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// heavyInit matches the package inits `narrowd hook` must not wait for
// while the daemon answers: the engine's dependencies. (cel-go's
// operators package has no imports and starts first in any case.)
var heavyInit = regexp.MustCompile(`(?m)^init (cel\.dev/cel-go/(?:cel|parser|checker|interpreter) |google\.golang\.org/protobuf|github\.com/prometheus/|github\.com/modelcontextprotocol/|net/http |encoding/json |strings |main )`)

// TestHookAnswersEarly runs the built binary as an agent would, with the
// Go runtime tracing each package init: while the daemon answers, the
// reply is the daemon's and none of the engine's packages has started;
// with the daemon gone, main judges the same payload (handed back on
// stdin) in-process.
func TestHookAnswersEarly(t *testing.T) {
	bin := narrowdBinary(t)
	dir := t.TempDir()
	_, sock := startBinary(t, bin, dir)
	payload := []byte(`{"session_id":"early","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf ~/x"},"tool_use_id":"toolu_early"}`)

	hook := func(sock string) (stdout, stderr string, code int) {
		cmd := exec.Command(bin, "hook", "--socket", sock, "claude")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
		cmd.Stdin = bytes.NewReader(payload)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}

	stdout, stderr, code := hook(sock)
	if code != 0 || !strings.Contains(stdout, `"permissionDecision":"deny"`) {
		t.Fatalf("daemon up: exit %d, stdout %q", code, stdout)
	}
	if m := heavyInit.FindAllString(stderr, -1); len(m) > 0 {
		t.Errorf("the shim initialised %q before answering from the daemon", m)
	}
	if n := strings.Count(stderr, "\ninit ") + 1; n > 40 {
		t.Errorf("the shim ran %d package inits before answering; the early answer should need about 25", n)
	}

	down, stderr, code := hook(filepath.Join(dir, "absent.sock"))
	if code != 0 || !strings.Contains(down, `"permissionDecision":"deny"`) || !strings.Contains(stderr, "daemon unreachable, evaluated in-process") {
		t.Fatalf("daemon down: exit %d, stdout %q, stderr %q", code, down, stderr)
	}
	if !heavyInit.MatchString(stderr) {
		t.Errorf("daemon down: main never ran (no engine init in the trace)")
	}
}

// engineInit matches the inits a sandbox stage must not wait for: the
// engine, the metrics and main.
var engineInit = regexp.MustCompile(`(?m)^init (cel\.dev/cel-go/(?:cel|parser|checker|interpreter) |github\.com/prometheus/client_golang/|github\.com/modelcontextprotocol/go-sdk/mcp |net/http |main )`)

// TestStageStartsEarly: narrowd exec starts narrowd twice on the way into
// its sandbox, and each stage runs from quickstage's init, before the
// engine's packages start. An unknown stage fails there, with nothing
// run.
func TestStageStartsEarly(t *testing.T) {
	bin := narrowdBinary(t)
	cmd := exec.Command(bin, "exec", "--stage", "bogus")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 125 {
		t.Fatalf("unknown stage: %v, want exit 125", err)
	}
	if !strings.Contains(stderr.String(), `narrowd exec: sandbox: unknown sandbox stage "bogus"; nothing ran`) {
		t.Errorf("stderr %q", stderr.String())
	}
	if m := engineInit.FindAllString(stderr.String(), -1); len(m) > 0 {
		t.Errorf("the stage initialised %q first", m)
	}
	if !strings.Contains(stderr.String(), "init ") {
		t.Errorf("no init trace: %q", stderr.String())
	}
}
