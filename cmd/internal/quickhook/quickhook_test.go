package quickhook

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narrowd/narrowd/daemon/hookclient"
)

// daemon answers on a real Unix socket: reply is the raw body, exit its
// exit code; json answers an old daemon's envelope instead; status other
// than 200 is an error.
func daemon(t *testing.T, status int, json bool, stdout, stderr string, exit string) (sock string, seen *[]byte) {
	t.Helper()
	sock = filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		switch {
		case status != 200:
			w.WriteHeader(status)
		case json:
			w.Header().Set("Content-Type", hookclient.ReplyType)
			w.Write([]byte(`{"stdout":"e30=","stderr":"","exit_code":0}`))
		default:
			w.Header().Set("Content-Type", hookclient.RawReplyType)
			w.Header().Set(hookclient.ExitCodeHeader, exit)
			w.Header().Set(hookclient.StdoutLengthHeader, strconv.Itoa(len(stdout)))
			w.Write([]byte(stdout + stderr))
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock, &got
}

type handed struct {
	called  bool
	payload string
	why     string
}

func TestAnswer(t *testing.T) {
	payload := `{"tool_name":"Bash","tool_input":{"command":"ls"}}`
	block, _ := daemon(t, 200, false, `{"decision":"block"}`, "no\n", "2")
	allow, _ := daemon(t, 200, false, "", "", "0")
	old, _ := daemon(t, 200, true, "", "", "0")
	bad, _ := daemon(t, 500, false, "", "", "0")
	exit1, _ := daemon(t, 200, false, "", "", "1")
	cfgDir := t.TempDir()
	os.MkdirAll(filepath.Join(cfgDir, "narrowd"), 0o700)
	os.WriteFile(filepath.Join(cfgDir, "narrowd", "config.toml"), []byte("socket = \""+block+"\"\n"), 0o600)
	quotedCfg := filepath.Join(t.TempDir(), "quoted.toml")
	os.WriteFile(quotedCfg, []byte("\"socket\" = \""+allow+"\"\n"), 0o600)
	plainCfg := filepath.Join(t.TempDir(), "plain.toml")
	os.WriteFile(plainCfg, []byte("profile = \"strict\"\n"), 0o600)
	runtime := t.TempDir()
	os.MkdirAll(filepath.Join(runtime, "narrowd"), 0o700)
	os.Symlink(block, filepath.Join(runtime, "narrowd", "narrowd.sock"))

	cases := []struct {
		name     string
		argv     []string
		env      map[string]string
		done     bool
		code     int
		stdout   string
		stderr   string
		handed   bool
		why      string // prefix
		readNone bool
	}{
		{name: "daemon blocks", argv: []string{"claude", "--socket", block}, done: true, code: 2, stdout: `{"decision":"block"}`, stderr: "no\n"},
		{name: "daemon allows", argv: []string{"--socket=" + allow, "--agent", "codex"}, done: true},
		{name: "default socket", argv: []string{"claude"}, env: map[string]string{"XDG_RUNTIME_DIR": runtime}, done: true, code: 2, stdout: `{"decision":"block"}`, stderr: "no\n"},
		{name: "config without a socket", argv: []string{"claude", "--config", plainCfg}, env: map[string]string{"XDG_RUNTIME_DIR": runtime}, done: true, code: 2, stdout: `{"decision":"block"}`, stderr: "no\n"},
		{name: "config names the socket", argv: []string{"claude"}, env: map[string]string{"XDG_CONFIG_HOME": cfgDir}, done: true, code: 2, stdout: `{"decision":"block"}`, stderr: "no\n"},
		{name: "config names it otherwise", argv: []string{"claude", "--config", quotedCfg}, env: map[string]string{"XDG_RUNTIME_DIR": runtime}, handed: true},
		{name: "explicit config missing", argv: []string{"claude", "--config", filepath.Join(cfgDir, "absent.toml")}, handed: true},
		{name: "older daemon", argv: []string{"claude", "--socket", old}, handed: true},
		{name: "daemon error", argv: []string{"claude", "--socket", bad}, handed: true, why: "unusable: "},
		{name: "exit 1", argv: []string{"claude", "--socket", exit1}, handed: true, why: "unusable: "},
		{name: "daemon down", argv: []string{"claude", "--socket", filepath.Join(cfgDir, "none.sock")}, handed: true, why: "unreachable: "},
		{name: "offline", argv: []string{"--offline", "claude"}, readNone: true},
		{name: "help", argv: []string{"-h"}, readNone: true},
		{name: "two agents", argv: []string{"claude", "codex"}, readNone: true},
		{name: "unknown flag", argv: []string{"--bogus", "claude"}, readNone: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			var stdout, stderr bytes.Buffer
			stdin := strings.NewReader(payload)
			var h handed
			code, done := Answer(tc.argv, stdin, &stdout, &stderr, getenv, func(p []byte, why string) error {
				h = handed{true, string(p), why}
				return nil
			})
			if done != tc.done || code != tc.code || stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Fatalf("Answer = %d, %v, stdout %q, stderr %q", code, done, stdout.String(), stderr.String())
			}
			switch {
			case tc.readNone:
				if h.called || stdin.Len() != len(payload) {
					t.Fatalf("read %d bytes of stdin, handed %+v; want nothing touched", len(payload)-stdin.Len(), h)
				}
			case tc.handed:
				if !h.called || h.payload != payload || !strings.HasPrefix(h.why, tc.why) || (tc.why == "") != (h.why == "") {
					t.Fatalf("handed %+v, want the payload and why %q…", h, tc.why)
				}
			case h.called:
				t.Fatalf("handed %+v after answering", h)
			}
		})
	}
}

// A hand-off that fails blocks the call: never a silent exit 0.
func TestAnswerHandOffFails(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code, done := Answer([]string{"claude", "--socket", "/nonexistent/narrowd.sock"}, strings.NewReader("{}"), &stdout, &stderr,
		func(string) string { return "" }, func([]byte, string) error { return errors.New("no memory file") })
	if !done || code != 2 || !strings.Contains(stdout.String(), `"decision":"block"`) || !strings.Contains(stderr.String(), "no memory file") {
		t.Fatalf("Answer = %d, %v, %q, %q", code, done, stdout.String(), stderr.String())
	}
}

func TestMemFile(t *testing.T) {
	want := bytes.Repeat([]byte("payload\x00"), 20000) // beyond a pipe's buffer
	fd, err := memFile(want)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "mem")
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, %v; want %d", len(got), err, len(want))
	}
}

func TestParseArgs(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		argv []string
		want Args
		ok   bool
	}{
		{[]string{"claude"}, Args{Agent: "claude", Timeout: DefaultTimeout}, true},
		{[]string{}, Args{Agent: "auto", Timeout: DefaultTimeout}, true},
		{[]string{"-socket", "/s", "--event=permissionRequest", "copilot", "--interactive"}, Args{Agent: "copilot", Socket: "/s", Event: "permissionRequest", Timeout: DefaultTimeout, Interactive: &yes}, true},
		{[]string{"--interactive=false", "--timeout", "250ms", "--agent=codex", "codex"}, Args{Agent: "codex", Timeout: 250 * time.Millisecond, Interactive: &no}, true},
		{[]string{"--config", "-x", "gemini"}, Args{Agent: "gemini", Config: "-x", Timeout: DefaultTimeout}, true},
		{[]string{"--socket"}, Args{}, false},
		{[]string{"--timeout", "soon", "claude"}, Args{}, false},
		{[]string{"--interactive=maybe"}, Args{}, false},
		{[]string{"---socket", "x"}, Args{}, false},
		{[]string{"--", "claude"}, Args{}, false},
		{[]string{"--help"}, Args{}, false},
		{[]string{"claude", "--agent", "codex"}, Args{}, false},
	}
	for _, tc := range cases {
		got, ok := ParseArgs(tc.argv)
		if ok != tc.ok || ok && !same(got, tc.want) {
			t.Errorf("ParseArgs(%q) = %+v, %v; want %+v, %v", tc.argv, got, ok, tc.want, tc.ok)
		}
	}
}

func same(a, b Args) bool {
	ai, bi := a.Interactive, b.Interactive
	a.Interactive, b.Interactive = nil, nil
	return a == b && (ai == nil) == (bi == nil) && (ai == nil || *ai == *bi)
}

func TestConfigSocket(t *testing.T) {
	cases := []struct {
		name, file string
		sock       string
		found, ok  bool
	}{
		{"empty", "", "", false, true},
		{"no-socket", "http = \"127.0.0.1:8787\"\nprofile = \"standard\"\n", "", false, true},
		{"basic", "socket = \"/run/n.sock\"\n", "/run/n.sock", true, true},
		{"literal", "socket='/run/n.sock'", "/run/n.sock", true, true},
		{"blanks-comment-crlf", "# mine\r\n\t socket\t=  \"/run/a b#c.sock\"   # the daemon's\r\nhttp = \"x\"\r\n", "/run/a b#c.sock", true, true},
		{"after-other-keys", "profile = \"standard\"\nworkspaces = [\"/src\"]\nsocket = \"/s\"\n[x]\ny = 1\n", "/s", true, true},
		{"home", "socket = \"~/run/n.sock\"", "/home/u/run/n.sock", true, true},
		{"home-alone", "socket = \"~\"", "/home/u", true, true},
		{"tilde-user-kept", "socket = \"~bob/n.sock\"", "~bob/n.sock", true, true},
		{"empty-value", "socket = \"\"", "", true, true},
		{"commented-out", "# socket = \"/old\"\n", "", false, true},
		{"in-a-table", "[other]\nsocket = \"/s\"\n", "", false, false},
		{"after-a-bracket-line", "workspaces = [\n[\"a\"]]\nsocket = \"/s\"\n", "", false, false},
		{"twice", "socket = \"/a\"\nsocket = \"/b\"\n", "", false, false},
		{"quoted-key", "\"socket\" = \"/s\"", "", false, false},
		{"other-key", "socket_dir = \"/s\"", "", false, false},
		{"dotted", "socket.path = \"/s\"", "", false, false},
		{"in-a-value", "profile = \"/p/socket.toml\"", "", false, false},
		{"trailing-text", "socket = \"/s\" x", "", false, false},
		{"unterminated", "socket = \"/s", "", false, false},
		{"not-a-string", "socket = 5", "", false, false},
		{"escape", "socket = \"/s\\u0041\"", "", false, false},
		{"escape-elsewhere", "http = \"\\u0073ocket\"", "", false, false},
		{"multi-line-string", "socket = \"\"\"\n/s\"\"\"", "", false, false},
		{"multi-line-literal", "x = '''\nsocket = \"/s\"\n'''", "", false, false},
		{"control", "socket = \"/s\x01\"", "", false, false},
		{"bom", "\uFEFFsocket = \"/s\"", "", false, false},
		{"bad-utf8", "socket = \"/s\xff\"", "", false, false},
		{"key-in-any-case", "SoCKet = \"/s\"", "/s", true, true},
		{"quoted-key-any-case", "\"soCKet\"=\"0\"", "", false, false},
		{"long-s", "\u017Focket = \"/s\"", "", false, false},
		{"kelvin", "soc\u212Aet = \"/s\"", "", false, false},
		{"two-cases", "socket = \"/a\"\nSOCKET = \"/b\"", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sock, found, ok := ConfigSocket([]byte(tc.file), "/home/u")
			if sock != tc.sock || found != tc.found || ok != tc.ok {
				t.Errorf("ConfigSocket(%q) = %q, %v, %v; want %q, %v, %v", tc.file, sock, found, ok, tc.sock, tc.found, tc.ok)
			}
		})
	}
}
