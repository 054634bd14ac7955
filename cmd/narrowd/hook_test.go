package main

import (
	"flag"
	"io"
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
