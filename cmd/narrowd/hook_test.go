package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/cmd/internal/quickhook"
)

// quickParseCases are argument lists an agent's hook command might carry,
// and some it should not.
var quickParseCases = [][]string{
	{"claude"},
	{},
	{"--agent", "codex"},
	{"--agent=codex", "codex"},
	{"-agent", "gemini", "gemini"},
	{"claude", "codex"},
	{"claude", "--agent", "codex"},
	{"--event", "permissionRequest", "copilot"},
	{"copilot", "--event=postToolUse", "--socket", "/run/x.sock"},
	{"--interactive", "claude"},
	{"--interactive=false", "claude"},
	{"--interactive", "false"},
	{"-interactive=1", "cursor"},
	{"--interactive=maybe"},
	{"--offline", "claude"},
	{"--offline=false", "claude"},
	{"--timeout", "250ms", "claude"},
	{"--timeout=soon", "claude"},
	{"--timeout", "-1s", "claude"},
	{"--socket"},
	{"--socket", "--offline"},
	{"--config", "-", "claude"},
	{"-", "claude"},
	{"--", "claude"},
	{"claude", "--", "--socket", "x"},
	{"---socket", "x"},
	{"-=x"},
	{"--=x"},
	{"-h"},
	{"--help"},
	{"--bogus", "claude"},
	{""},
	{"claude", ""},
	{"--agent", "", "claude"},
}

// TestQuickParseAgrees: wherever the early shim takes an argument list, it
// reads it exactly as `narrowd hook` does with package flag.
func TestQuickParseAgrees(t *testing.T) {
	for _, argv := range quickParseCases {
		checkQuickParse(t, argv)
	}
}

func FuzzQuickParse(f *testing.F) {
	for _, argv := range quickParseCases {
		f.Add(strings.Join(argv, "\x00"))
	}
	f.Fuzz(func(t *testing.T, joined string) {
		var argv []string
		if joined != "" {
			argv = strings.Split(joined, "\x00")
		}
		checkQuickParse(t, argv)
	})
}

func checkQuickParse(t *testing.T, argv []string) {
	t.Helper()
	quick, ok := quickhook.ParseArgs(argv)
	fs := flag.NewFlagSet("hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	full, err := parseHookArgs(fs, argv)
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("%q: the early shim takes it (%+v), narrowd hook refuses it: %v", argv, quick, err)
	}
	qi, fi := quick.Interactive, full.Interactive
	quick.Interactive, full.Interactive = nil, nil
	if quick != full || (qi == nil) != (fi == nil) || qi != nil && *qi != *fi {
		t.Fatalf("%q: early %+v (interactive %v), narrowd hook %+v (interactive %v)", argv, quick, qi, full, fi)
	}
}

// quickConfigCases are config files, plain and not.
var quickConfigCases = []string{
	"",
	"socket = \"/run/n.sock\"\n",
	"socket='/run/n.sock'",
	"# mine\r\n\t socket\t=  \"/run/a b#c.sock\"   # the daemon's\r\nhttp = \"127.0.0.1:1\"\r\n",
	"profile = \"standard\"\nworkspaces = [\"/src\"]\nsocket = \"/s\"\n",
	"socket = \"~/run/n.sock\"",
	"socket = \"~\"",
	"socket = \"\"",
	"# socket = \"/old\"\nhttp = \"127.0.0.1:1\"\n",
	"[other]\nsocket = \"/s\"\n",
	"socket = \"/a\"\nsocket = \"/b\"\n",
	"\"socket\" = \"/s\"",
	"socket = \"/s\" x",
	"socket = \"\"\"\n/s\"\"\"",
	"socket = \"/s\\u0041\"",
	"interactive = true\nsocket = '/s' # c\n",
	"\"soCKet\"=\"0\"",
	"SOCKET = \"/up\"",
	"\u017Focket = \"/s\"",
}

// TestQuickConfigAgrees: wherever the early shim reads the socket from a
// config file, narrowd's TOML config reads the same socket, for every file
// that is a valid config.
func TestQuickConfigAgrees(t *testing.T) {
	plain := 0
	for _, text := range quickConfigCases {
		if checkQuickConfig(t, text) {
			plain++
		}
	}
	if plain < 8 {
		t.Errorf("the early shim read only %d of the plain files", plain)
	}
}

func FuzzQuickConfig(f *testing.F) {
	for _, text := range quickConfigCases {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkQuickConfig(t, text)
	})
}

// checkQuickConfig reports whether both read text as a valid config.
func checkQuickConfig(t *testing.T, text string) bool {
	t.Helper()
	sock, found, ok := quickhook.ConfigSocket([]byte(text), "/home/u")
	if !ok {
		return false
	}
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	e := env{getenv: func(k string) string {
		return map[string]string{"HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/7"}[k]
	}}
	c, err := loadConfig(e, p)
	if err != nil {
		// Not a valid config: the early shim still asks the socket its
		// plain line names; narrowd hook judges with none.
		return false
	}
	c.defaults(e)
	if !found || sock == "" {
		sock = defaultSocket(e)
	}
	if sock != c.Socket {
		t.Fatalf("%q: the early shim asks %q, narrowd's config names %q", text, sock, c.Socket)
	}
	return true
}
