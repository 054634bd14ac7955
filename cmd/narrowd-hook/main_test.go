package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/daemon"
)

// serve starts a daemon on a socket in a short temporary directory.
func serve(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "run", "n.sock")
	s, err := daemon.New(daemon.Config{SocketPath: sock, AuditDir: filepath.Join(dir, "audit"), StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := daemon.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, daemon.Listeners{Unix: ln}); s.Close(); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock
}

func hook(t *testing.T, payload string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, strings.NewReader(payload), &o, &e)
	return o.String(), e.String(), code
}

const (
	lsCall   = `{"session_id":"s1","transcript_path":"/t/s1.jsonl","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls -la"},"tool_use_id":"toolu_1"}`
	wipeCall = `{"session_id":"s1","transcript_path":"/t/s1.jsonl","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"mcp__evil__wipe","tool_input":{"target":"prod"},"tool_use_id":"toolu_2"}`
	copilot  = `{"sessionId":"k1","timestamp":1796035192663,"cwd":"/tmp","toolName":"evil-wipe","toolArgs":{"target":"prod"}}`
)

// With the daemon up, the light shim answers exactly as the daemon's
// envelope says, for every argument form narrowd hook takes.
func TestAnswersAsTheDaemon(t *testing.T) {
	sock := serve(t)
	c := daemon.Client{Socket: sock}
	for _, tc := range []struct {
		payload, name, event string
		args                 []string
	}{
		{wipeCall, "claude", "", []string{"--socket", sock, "claude"}},
		{wipeCall, "claude", "", []string{"claude", "--socket=" + sock}},
		{lsCall, "auto", "", []string{"--socket", sock, "--agent", "auto"}},
		{copilot, "copilot", "permissionRequest", []string{"--socket", sock, "--event", "permissionRequest", "copilot"}},
		{copilot, "copilot", "", []string{"--socket", sock, "copilot"}},
	} {
		want, err := c.HookEvent(context.Background(), tc.name, tc.event, []byte(tc.payload), nil)
		if err != nil {
			t.Fatal(err)
		}
		out, errOut, code := hook(t, tc.payload, tc.args...)
		if out != string(want.Stdout) || errOut != want.Stderr || code != want.ExitCode {
			t.Errorf("%q: got (%q, %q, %d), want (%q, %q, %d)", tc.args, out, errOut, code, want.Stdout, want.Stderr, want.ExitCode)
		}
	}
	// The configured event reached the daemon: permissionRequest's reply.
	if out, _, code := hook(t, copilot, "--socket", sock, "--event", "permissionRequest", "copilot"); code != 2 || !strings.Contains(out, `"behavior":"deny"`) {
		t.Errorf("copilot permissionRequest: %d %s", code, out)
	}
}

// With the daemon down and no narrowd beside this binary to judge
// in-process, the call is blocked, never let through; the same for
// arguments the light shim leaves to narrowd hook.
func TestBlocksWhenNarrowdCannotRun(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--socket", filepath.Join(dir, "absent.sock"), "claude"},
		{"--bogus", "claude"},
		{"--socket", filepath.Join(dir, "absent.sock"), "claude", "codex"},
	} {
		out, errOut, code := hook(t, wipeCall, args...)
		if code != 2 || !strings.Contains(out, `"decision":"block"`) || !strings.Contains(errOut, "could not check this call") {
			t.Errorf("%q: (%q, %q, %d), want a block", args, out, errOut, code)
		}
	}
}

// Answers the light shim cannot trust go to narrowd hook, never to the
// agent.
func TestUnusableReplies(t *testing.T) {
	for _, resp := range []string{
		"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.narrowd.reply+json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{}\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.narrowd.reply+json\r\nContent-Length: 3\r\n\r\n{x}",
		"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.narrowd.reply+json\r\nContent-Length: 15\r\n\r\n{\"exit_code\":1}",
		"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.narrowd.reply+json\r\n\r\n{}",
	} {
		if env, err := readReply(bufio.NewReader(strings.NewReader(resp))); err == nil {
			t.Errorf("%q read as %+v", resp, env)
		}
	}
	body := `{"stdout":"e30=","stderr":"x","exit_code":2}`
	good := "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.narrowd.reply+json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	env, err := readReply(bufio.NewReader(strings.NewReader(good)))
	if err != nil || string(env.Stdout) != "{}" || env.Stderr != "x" || env.ExitCode != 2 {
		t.Errorf("good reply: %+v, %v", env, err)
	}
}
