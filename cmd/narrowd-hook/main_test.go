package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveNarrowd()
	os.Exit(code)
}

// Payloads narrowd cannot allow, in each agent's dialect.
const (
	claudeRm  = `{"session_id":"s1","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf ~/x"},"tool_use_id":"toolu_1"}`
	geminiMCP = `{"session_id":"g1","transcript_path":"/t/g1.json","cwd":"/tmp","hook_event_name":"BeforeTool","timestamp":"2026-11-30T10:30:09.099Z","tool_name":"mcp_evil_wipe","tool_input":{"target":"prod"}}`
	codexMCP  = `{"session_id":"c1","turn_id":"t1","transcript_path":null,"cwd":"/tmp","hook_event_name":"PreToolUse","model":"gpt-5.5","permission_mode":"default","tool_name":"mcp__evil__wipe","tool_input":{"target":"prod"},"tool_use_id":"call_1"}`
	copilot   = `{"sessionId":"k1","timestamp":1796035192663,"cwd":"/tmp","toolName":"evil-wipe","toolArgs":{"target":"prod"}}`
	cursorRm  = `{"conversation_id":"u1","generation_id":"g1","hook_event_name":"beforeShellExecution","command":"rm -rf ~/x","cwd":"/tmp","workspace_roots":["/tmp"]}`
)

// heavyInit matches the inits of narrowd's engine: narrowd-hook links none.
var heavyInit = regexp.MustCompile(`(?m)^init (cel\.dev/|google\.golang\.org/protobuf|github\.com/prometheus/|net/http |encoding/json )`)

type world struct {
	t             *testing.T
	dir, narrowd  string
	hook          string
	sock, nowhere string
}

func newWorld(t *testing.T) *world {
	if testing.Short() {
		t.Skip("builds narrowd and narrowd-hook")
	}
	narrowd, err := testenv.Narrowd()
	if err != nil {
		t.Fatal(err)
	}
	hook, err := testenv.NarrowdHook()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w := &world{t: t, dir: dir, narrowd: narrowd, hook: hook,
		sock: filepath.Join(dir, "run", "narrowd.sock"), nowhere: filepath.Join(dir, "absent.sock")}
	srv := exec.Command(narrowd, "serve", "--socket", w.sock, "--state-dir", filepath.Join(dir, "state"), "--log-level", "warn")
	srv.Env = w.env()
	testenv.Serve(t, srv, w.sock)
	return w
}

func (w *world) env(extra ...string) []string {
	return append(os.Environ(), append([]string{"HOME=" + w.dir, "XDG_CONFIG_HOME=" + filepath.Join(w.dir, "config"),
		"XDG_STATE_HOME=" + filepath.Join(w.dir, "state"), "XDG_RUNTIME_DIR=" + filepath.Join(w.dir, "run"),
		"NARROWD_HOOK_ASKED="}, extra...)...)
}

type result struct {
	stdout, stderr string
	code           int
}

func (w *world) run(bin string, args []string, payload string, extraEnv ...string) result {
	w.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = w.env(extraEnv...)
	cmd.Stdin = strings.NewReader(payload)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{out.String(), errb.String(), 0}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// TestSameAsNarrowdHook holds narrowd-hook to `narrowd hook`: the same
// stdout, stderr and exit code for every agent, with the daemon up and
// down, for arguments it does not parse and for help.
func TestSameAsNarrowdHook(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		name    string
		args    []string // after the socket flag
		down    bool
		payload string
		want    string // in stdout or stderr, so that agreeing on nothing fails
	}{
		{"claude", []string{"claude"}, false, claudeRm, `"permissionDecision":"deny"`},
		{"claude-down", []string{"claude"}, true, claudeRm, "daemon unreachable, evaluated in-process"},
		{"gemini", []string{"gemini"}, false, geminiMCP, `"decision":"deny"`},
		{"gemini-down", []string{"gemini"}, true, geminiMCP, "evaluated in-process"},
		{"codex", []string{"codex"}, false, codexMCP, "narrowd: "},
		{"codex-down", []string{"codex"}, true, codexMCP, "evaluated in-process"},
		{"copilot-permission", []string{"--event", "permissionRequest", "copilot"}, false, copilot, `"behavior":"deny"`},
		{"copilot-down", []string{"copilot", "--event=permissionRequest"}, true, copilot, `"behavior":"deny"`},
		{"cursor", []string{"cursor"}, false, cursorRm, `"permission":"deny"`},
		{"cursor-down", []string{"cursor"}, true, cursorRm, "evaluated in-process"},
		{"garbage", []string{"claude"}, false, "this is not json {{{", `"decision":"block"`},
		{"garbage-down", []string{"gemini"}, true, "this is not json {{{", "could not check this call"},
		{"offline", []string{"--offline", "claude"}, false, claudeRm, `"permissionDecision":"deny"`},
		{"unknown-flag", []string{"--frob", "claude"}, false, claudeRm, "bad arguments"},
		{"two-agents", []string{"claude", "codex"}, false, claudeRm, "one agent name"},
		{"help", []string{"--help"}, false, "", "usage: narrowd hook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sock := w.sock
			if tt.down {
				sock = w.nowhere
			}
			args := append([]string{"--socket", sock}, tt.args...)
			want := w.run(w.narrowd, append([]string{"hook"}, args...), tt.payload)
			got := w.run(w.hook, args, tt.payload)
			if got != want {
				t.Errorf("narrowd-hook %q:\n got  %+v\nwant %+v (narrowd hook)", args, got, want)
			}
			if !strings.Contains(want.stdout+want.stderr, tt.want) {
				t.Errorf("narrowd hook %q: no %q in %+v", args, tt.want, want)
			}
		})
	}
}

// TestAnswersAlone: while the daemon answers, narrowd-hook replies without
// starting narrowd (no engine package is ever initialised), so it works
// even with no narrowd beside it; anything the daemon does not answer is
// blocked when narrowd is missing, never let through.
func TestAnswersAlone(t *testing.T) {
	w := newWorld(t)
	lone := filepath.Join(t.TempDir(), "narrowd-hook")
	b, err := os.ReadFile(w.hook)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lone, b, 0o755); err != nil {
		t.Fatal(err)
	}

	up := w.run(lone, []string{"--socket", w.sock, "claude"}, claudeRm, "GODEBUG=inittrace=1")
	if up.code != 0 || !strings.Contains(up.stdout, `"permissionDecision":"deny"`) {
		t.Errorf("daemon up: %+v", up)
	}
	if m := heavyInit.FindAllString(up.stderr, -1); len(m) > 0 {
		t.Errorf("narrowd-hook initialised %q", m)
	}
	if !strings.Contains(up.stderr, "init ") {
		t.Errorf("no init trace: %q", up.stderr)
	}

	for _, args := range [][]string{
		{"--socket", w.nowhere, "claude"},
		{"--frob", "claude"},
	} {
		got := w.run(lone, args, claudeRm)
		if got.code != 2 || !strings.Contains(got.stdout, `{"decision":"block"`) || !strings.Contains(got.stderr, "could not check this call") {
			t.Errorf("%q with no narrowd beside it: %+v", args, got)
		}
	}
}

// TestHandoffAsksOnce: the full narrowd that narrowd-hook starts does not
// ask the daemon again (so a frozen daemon costs one timeout, not two):
// given the hand-off, `narrowd hook` judges in-process even with the
// daemon up.
func TestHandoffAsksOnce(t *testing.T) {
	w := newWorld(t)
	got := w.run(w.narrowd, []string{"hook", "--socket", w.sock, "claude"}, claudeRm, "NARROWD_HOOK_ASKED=unreachable: test")
	if got.code != 0 || !strings.Contains(got.stdout, `"permissionDecision":"deny"`) || !strings.Contains(got.stderr, "evaluated in-process") {
		t.Errorf("%+v", got)
	}

	// A daemon that accepts and never answers: narrowd-hook waits out its
	// timeout once, and narrowd judges in-process.
	frozen := filepath.Join(w.dir, "frozen.sock")
	l, err := net.Listen("unix", frozen)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan int)
	go func() {
		n := 0
		for {
			c, err := l.Accept()
			if err != nil {
				accepted <- n
				return
			}
			n++
			defer c.Close()
		}
	}()
	got = w.run(w.hook, []string{"--socket", frozen, "--timeout", "300ms", "claude"}, claudeRm)
	l.Close()
	if n := <-accepted; n != 1 {
		t.Errorf("the frozen daemon was asked %d times, want once", n)
	}
	if got.code != 0 || !strings.Contains(got.stdout, `"permissionDecision":"deny"`) || !strings.Contains(got.stderr, "evaluated in-process") {
		t.Errorf("frozen daemon: %+v", got)
	}
}
