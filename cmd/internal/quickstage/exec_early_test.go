package quickstage_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/narrowd/narrowd/cmd/internal/quickstage"
	"github.com/narrowd/narrowd/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveNarrowd()
	os.Exit(code)
}

// mainExecFlags is runExec's flag set (cmd/narrowd/exec.go): ParseExec
// must take exactly what it takes, as it takes it.
func mainExecFlags() (*flag.FlagSet, *quickstage.ExecArgs, *string) {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	a, config := quickstage.ExecFlags(fs)
	return fs, a, config
}

// checkParseExec holds ParseExec to package flag: where flag parses argv
// without --config, ParseExec takes it with the same values; everything
// else (help, errors, --config) it leaves to main.
func checkParseExec(t *testing.T, argv []string) {
	t.Helper()
	fs, want, config := mainExecFlags()
	err := fs.Parse(argv)
	takes := err == nil && !slices.Contains(setFlags(fs), "config")
	want.Args = fs.Args()
	got, ok := quickstage.ParseExec(argv)
	switch {
	case ok != takes:
		t.Errorf("ParseExec(%q) ok = %v; package flag: %v, config %q", argv, ok, err, *config)
	case ok && !sameArgs(got, *want):
		t.Errorf("ParseExec(%q) = %+v; package flag: %+v", argv, got, *want)
	}
}

func setFlags(fs *flag.FlagSet) []string {
	var names []string
	fs.Visit(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

func sameArgs(a, b quickstage.ExecArgs) bool {
	return a.Ticket == b.Ticket && a.Socket == b.Socket && a.Confine == b.Confine &&
		slices.Equal(a.Writable, b.Writable) && slices.Equal(a.Args, b.Args)
}

var parseCases = [][]string{
	{},
	{"--confine", "--", "sh", "-c", "x"},
	{"-confine", "sh", "-x", "--ticket", "t"},
	{"--confine=true", "--write", "/a", "-write=/b", "--", "p"},
	{"--confine=false", "--ticket", "T"},
	{"--confine=0", "-confine=T", "p"},
	{"--ticket=T"},
	{"--ticket=T=U", "--socket", "=s"},
	{"--ticket", "--confine"},
	{"--ticket"},
	{"--write"},
	{"--confine=maybe", "p"},
	{"--confine", "maybe"},
	{"---confine", "p"},
	{"-=x"},
	{"--=x"},
	{"--frob"},
	{"--confine", "--frob", "p"},
	{"--confine", "p", "--frob"},
	{"-h"},
	{"--help"},
	{"-help=1"},
	{"--config", "f", "--ticket", "T"},
	{"--config=", "--ticket", "T"},
	{"--stage", "net"},
	{"--stage", "net", "x"},
	{"-", "x"},
	{"--confine", "-", "x"},
	{"--socket", "", "--ticket", "T"},
	{"--ticket", "", "--confine", "--", "--", "--"},
	{"--", "--confine"},
	{"--Confine", "p"},
	{"--ticket", "a", "--ticket", "b"},
}

func TestParseExecAsFlag(t *testing.T) {
	for _, argv := range parseCases {
		checkParseExec(t, argv)
	}
}

// FuzzParseExec: arguments are the fuzzer's string split at NUL bytes.
func FuzzParseExec(f *testing.F) {
	for _, argv := range parseCases {
		f.Add(strings.Join(argv, "\x00"))
	}
	f.Fuzz(func(t *testing.T, s string) {
		var argv []string
		if s != "" {
			argv = strings.Split(s, "\x00")
		}
		checkParseExec(t, argv)
	})
}

// world is a real daemon on the default socket of a private home, and the
// narrowd built from this tree.
type world struct {
	t                *testing.T
	bin, dir, ws     string
	sock, configFile string
}

func newWorld(t *testing.T) *world {
	if testing.Short() {
		t.Skip("builds narrowd and runs its daemon and sandbox")
	}
	bin, err := testenv.Narrowd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w := &world{t: t, bin: bin, dir: dir, ws: filepath.Join(dir, "ws"),
		sock: filepath.Join(dir, "run", "narrowd", "narrowd.sock"), configFile: filepath.Join(dir, "config", "narrowd", "config.toml")}
	for _, d := range []string{w.ws, filepath.Join(dir, "run"), filepath.Dir(w.configFile)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.ws, "run.sh"), []byte("echo out; echo err >&2; exit 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(bin, "serve", "--state-dir", filepath.Join(dir, "state"), "--log-level", "error")
	srv.Env = w.daemonEnv()
	testenv.Serve(t, srv, w.sock)
	return w
}

// daemonEnv is the daemon's and the hook's: a config directory of their
// own, since the cases write the exec's config files.
func (w *world) daemonEnv() []string {
	return w.env("XDG_CONFIG_HOME=" + filepath.Join(w.dir, "daemon-config"))
}

func (w *world) env(extra ...string) []string {
	return append(os.Environ(), append([]string{"HOME=" + w.dir, "XDG_CONFIG_HOME=" + filepath.Join(w.dir, "config"),
		"XDG_STATE_HOME=" + filepath.Join(w.dir, "state"), "XDG_RUNTIME_DIR=" + filepath.Join(w.dir, "run")}, extra...)...)
}

var ticketArg = regexp.MustCompile(`--ticket ([0-9a-f]+)`)

// ticket asks the daemon, as Claude Code's hook would, for `sh run.sh`
// in the workspace; the daemon rewrites it to narrowd exec --ticket T.
func (w *world) ticket() string {
	w.t.Helper()
	payload, _ := json.Marshal(map[string]any{"session_id": "early", "transcript_path": "/t", "cwd": w.ws,
		"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]string{"command": "sh run.sh"}, "tool_use_id": "toolu_e"})
	cmd := exec.Command(w.bin, "hook", "--socket", w.sock, "claude")
	cmd.Env = w.daemonEnv()
	cmd.Stdin = bytes.NewReader(payload)
	out, err := cmd.Output()
	m := ticketArg.FindSubmatch(out)
	if err != nil || m == nil {
		w.t.Fatalf("no ticket from the daemon: %v %s", err, out)
	}
	return string(m[1])
}

type result struct {
	stdout, stderr string
	code           int
	trace          string // the init trace, apart
}

// run runs narrowd exec args with the Go runtime tracing package inits
// (the sandbox stages' too). "TICKET" in args becomes a fresh ticket.
func (w *world) run(args []string, extraEnv ...string) result {
	w.t.Helper()
	return w.runCommand([]string{w.bin, "exec"}, args, extraEnv)
}

// runSmall is run with narrowd-exec, the binary built beside narrowd,
// in place of narrowd exec.
func (w *world) runSmall(args []string, extraEnv ...string) result {
	w.t.Helper()
	return w.runCommand([]string{filepath.Join(filepath.Dir(w.bin), "narrowd-exec")}, args, extraEnv)
}

func (w *world) runCommand(command, args, extraEnv []string) result {
	w.t.Helper()
	args = slices.Clone(args)
	for i, a := range args {
		if a == "TICKET" {
			args[i] = w.ticket()
		}
	}
	cmd := exec.Command(command[0], append(command[1:], args...)...)
	cmd.Env = w.env(append([]string{"GODEBUG=inittrace=1"}, extraEnv...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	r.stderr, r.trace = splitTrace(errb.String())
	return r
}

func splitTrace(s string) (rest, trace string) {
	var a, b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "init ") {
			b.WriteString(sc.Text() + "\n")
		} else {
			a.WriteString(sc.Text() + "\n")
		}
	}
	return a.String(), b.String()
}

// engineInit matches the inits the early exec must not wait for: the
// engine, the metrics, net/http and main.
var engineInit = regexp.MustCompile(`(?m)^init (cel\.dev/cel-go/(?:cel|parser|checker|interpreter) |github\.com/prometheus/client_golang/|net/http |main )`)

// TestExecSameAsMain holds the early `narrowd exec`, and narrowd-exec,
// to main's: the same stdout, stderr and exit code for each case, main's
// forced by a --config of the same file (the early path leaves --config
// to main). Each early case must not start the engine; each case left to
// main must reach main (narrowd-exec hands it to narrowd exec).
func TestExecSameAsMain(t *testing.T) {
	w := newWorld(t)
	elsewhere := "XDG_RUNTIME_DIR=" + filepath.Join(w.dir, "elsewhere")
	tests := []struct {
		name   string
		args   []string
		config string   // the default config file's text; none if ""
		env    []string // more environment
		code   int
		want   string // in stdout or stderr, so that agreeing on nothing fails
		early  bool
	}{
		{name: "confine ok", args: []string{"--confine", "--write", w.ws, "--", "sh", "-c", "echo out; echo err >&2"}, want: "out\n", early: true},
		{name: "confine exit code", args: []string{"-confine", "-write=" + w.ws, "sh", "-c", "exit 7"}, code: 7, early: true},
		{name: "confine no program", args: []string{"--confine", "--write", w.ws}, code: 125, want: "--confine needs a program", early: true},
		{name: "confine and ticket", args: []string{"--confine", "--ticket", "0123", "--", "true"}, code: 125, want: "use either --confine or --ticket", early: true},
		{name: "neither", args: []string{"--write", w.ws}, code: 125, want: "needs --ticket T or --confine", early: true},
		{name: "ticket and program", args: []string{"--ticket", "0123", "--", "true"}, code: 125, want: "the ticket names the command", early: true},
		{name: "unknown flag", args: []string{"--frob", "--confine", "--", "true"}, code: 125, want: "flag provided but not defined: -frob"},
		{name: "help", args: []string{"--help"}, want: "usage: narrowd exec"},
		{name: "ticket ok", args: []string{"--ticket", "TICKET"}, code: 3, want: "out\n", early: true},
		{name: "ticket socket flag", args: []string{"--socket=" + w.sock, "--ticket", "TICKET"}, env: []string{elsewhere}, code: 3, want: "err\n", early: true},
		{name: "ticket unknown", args: []string{"--ticket", "0123abcd"}, code: 125, want: "the daemon refused the ticket: no such ticket", early: true},
		{name: "ticket daemon down", args: []string{"--ticket", "0123abcd"}, env: []string{elsewhere}, code: 125, want: "the daemon refused the ticket: daemon unreachable", early: true},
		{name: "config names the socket", args: []string{"--ticket", "TICKET"}, config: "# mine\nsocket = '" + w.sock + "' # the daemon\nprofile = \"standard\"\n", env: []string{elsewhere}, code: 3, want: "out\n", early: true},
		{name: "config main refuses", args: []string{"--ticket", "TICKET"}, config: "socket = '" + w.sock + "'\n[other]\n", code: 125, want: "unknown keys other"},
		{name: "config names the socket otherwise", args: []string{"--ticket", "TICKET"}, config: `"socket" = "` + w.sock + "\"\n", env: []string{elsewhere}, code: 3, want: "out\n"},
		{name: "config given", args: []string{"--config", w.configFile, "--ticket", "TICKET"}, config: "socket = \"" + w.sock + "\"\n", env: []string{elsewhere}, code: 3, want: "out\n"},
		{name: "config unreadable", args: []string{"--ticket", "0123abcd"}, config: "socket = 1\n", code: 125, want: "failed to read config"},
	}
	empty := filepath.Join(w.dir, "empty.toml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(w.configFile)
			forced := empty
			if tt.config != "" {
				if err := os.WriteFile(w.configFile, []byte(tt.config), 0o644); err != nil {
					t.Fatal(err)
				}
				forced = w.configFile
			}
			want := w.run(append([]string{"--config", forced}, tt.args...), tt.env...)
			if !strings.Contains(want.trace, "\ninit main ") {
				t.Errorf("--config did not reach main: %q", want.trace)
			}
			for _, how := range []struct {
				name string
				run  func([]string, ...string) result
			}{{"narrowd exec", w.run}, {"narrowd-exec", w.runSmall}} {
				got := how.run(tt.args, tt.env...)
				if got.stdout != want.stdout || got.stderr != want.stderr || got.code != want.code {
					t.Errorf("%s %q:\n got  %q %q exit %d\nwant %q %q exit %d (main)", how.name, tt.args,
						got.stdout, got.stderr, got.code, want.stdout, want.stderr, want.code)
				}
				if got.code != tt.code || !strings.Contains(got.stdout+got.stderr, tt.want) {
					t.Errorf("%s %q: %q %q exit %d; want exit %d and %q", how.name, tt.args, got.stdout, got.stderr, got.code, tt.code, tt.want)
				}
				switch m := engineInit.FindAllString(got.trace, -1); {
				case got.trace == "":
					t.Errorf("%s: no init trace", how.name)
				case tt.early && len(m) > 0:
					t.Errorf("%s: the early exec initialised %q", how.name, m)
				case !tt.early && !strings.Contains(got.trace, "\ninit main "):
					t.Errorf("%s: main did not run: %q", how.name, got.trace)
				}
			}
		})
	}
}

// TestExecStartsEarly: an early confined run and an early ticket's run
// initialise none of the engine's packages, nor main, in the wrapper or
// its stages.
func TestExecStartsEarly(t *testing.T) {
	w := newWorld(t)
	for _, tt := range []struct {
		args []string
		// starts are the starts of the binary it may take: the wrapper
		// and the net stage, which runs a confined program itself and a
		// held one too when the binary has no cgo (else it starts the
		// lock stage).
		starts []int
	}{
		{[]string{"--confine", "--write", w.ws, "--", "sh", "-c", "echo out"}, []int{2}},
		{[]string{"--ticket", "TICKET"}, []int{2, 3}},
	} {
		args := tt.args
		r := w.run(args)
		if !strings.HasPrefix(r.stdout, "out\n") {
			t.Errorf("%q: %+v", args, r)
		}
		// Each start traces its inits.
		if n := strings.Count(r.trace, "init runtime @"); !slices.Contains(tt.starts, n) {
			t.Errorf("%q: %d traced processes, want %v:\n%s", args, n, tt.starts, r.trace)
		}
		if m := engineInit.FindAllString(r.trace, -1); len(m) > 0 {
			t.Errorf("%q initialised %q", args, m)
		}
	}
}

// TestExecLeavesTheTicket: arguments the early path leaves to main leave
// the ticket unclaimed, so main can still redeem it (a ticket is single
// use): the early path did nothing first.
func TestExecLeavesTheTicket(t *testing.T) {
	w := newWorld(t)
	ticket := w.ticket()
	for _, args := range [][]string{
		{"--ticket", ticket, "--frob"},
		{"--ticket", ticket, "--help"},
		{"--ticket", ticket, "--confine=maybe"},
	} {
		if r := w.run(args); r.code == 3 || !strings.Contains(r.trace, "\ninit main ") {
			t.Errorf("%q: %+v", args, r)
		}
	}
	if r := w.run([]string{"--ticket", ticket}); r.code != 3 || r.stdout != "out\n" {
		t.Errorf("the ticket after the refused arguments: %+v", r)
	}
}

// TestExecForwardsSignals: a SIGTERM to the early wrapper reaches the
// command, as main's does.
func TestExecForwardsSignals(t *testing.T) {
	w := newWorld(t)
	for _, args := range [][]string{
		{"--confine", "--write", w.ws, "--", "sh", "-c", `trap 'echo got; exit 9' TERM; echo ready; while :; do sleep 0.05; done`},
		{"--config", filepath.Join(w.dir, "none.toml"), "--confine", "--", "sh", "-c", `trap 'echo got; exit 9' TERM; echo ready; while :; do sleep 0.05; done`},
	} {
		cmd := exec.Command(w.bin, append([]string{"exec"}, args...)...)
		cmd.Env = w.env()
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(out)
		if line, err := r.ReadString('\n'); line != "ready\n" {
			t.Fatalf("%q: %q %v", args, line, err)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		rest, _ := io.ReadAll(r)
		err = cmd.Wait()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 9 || string(rest) != "got\n" {
			t.Errorf("%q: SIGTERM: %v, stdout %q; want exit 9 and got", args, err, rest)
		}
	}
}
