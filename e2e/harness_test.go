package e2e

// The harness: the narrowd binary, the pinned clients from npm, a per-test
// world (temp HOME, project, marker outside the project, a real narrowd
// serve), a scripted fake model server and a client runner. The API
// dialects of the fake model live beside it (anthropic_test.go, …).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/narrowd/narrowd/internal/npmcache"
	"github.com/narrowd/narrowd/internal/testenv"
)

// narrowdBin is the narrowd binary TestMain builds once for every test.
var narrowdBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// NARROWD_E2E_NARROWD runs the suite against a prebuilt binary.
	if bin := os.Getenv("NARROWD_E2E_NARROWD"); bin != "" {
		narrowdBin = bin
		return m.Run()
	}
	bin, err := testenv.Narrowd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build narrowd:", err)
		return 1
	}
	defer testenv.RemoveNarrowd()
	narrowdBin = bin
	return m.Run()
}

// ---- honest skips -------------------------------------------------------

// missing skips the test with one loud line naming what is missing, or
// fails it when the suite is required to run.
// The line is printed to stderr once per cause, so that a run without -v
// shows it too.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if npmcache.Required() {
		t.Fatal("E2E FAILED: " + why + " (CI or NARROWD_E2E_REQUIRE=1 is set, so the suite must run)")
	}
	msg := "E2E SKIPPED: " + why
	announcedMu.Lock()
	if !announced[msg] {
		announced[msg] = true
		fmt.Fprintln(os.Stderr, msg)
	}
	announcedMu.Unlock()
	t.Skip(msg)
}

var (
	announcedMu sync.Mutex
	announced   = map[string]bool{}
)

// ---- pinned clients from npm -------------------------------------------

// npmClient is one pinned agent CLI on npm.
type npmClient struct {
	Pkg, Version string
	// Bin is the executable's name under node_modules/.bin.
	Bin string
	// Warm, when set, runs once per test binary after install with the
	// bin path, e.g. to unpack a client's payload into a shared cache.
	Warm func(bin string) error
}

// The pinned clients. Codex and Gemini are declared beside their tests.
var (
	claudeClient = npmClient{Pkg: "@anthropic-ai/claude-code", Version: "2.1.328", Bin: "claude"}
	// Copilot's npm bin is a loader that unpacks ~235 MB into
	// $COPILOT_CACHE_HOME on first start; copilotCacheDir shares it.
	copilotClient = npmClient{Pkg: "@github/copilot", Version: "1.0.102", Bin: "copilot", Warm: warmCopilot}
)

func (c npmClient) id() string { return c.Pkg + "@" + c.Version }

type installResult struct {
	bin string
	err error
}

var (
	installMu sync.Mutex
	installed = map[string]*installResult{}
)

// needClient returns the path of the pinned client's executable,
// installing it with npm on first use. A missing npm or an unreachable
// registry skips the test (fails it when required).
func needClient(t testing.TB, c npmClient) string {
	t.Helper()
	installMu.Lock()
	r, ok := installed[c.id()]
	if !ok {
		r = &installResult{}
		r.bin, r.err = installClient(c)
		installed[c.id()] = r
	}
	installMu.Unlock()
	if r.err != nil {
		missing(t, "%s could not be installed: %v", c.id(), r.err)
	}
	return r.bin
}

// installClient installs c into the shared npm cache and warms it.
func installClient(c npmClient) (string, error) {
	bin, err := npmcache.Install(npmcache.Package{Name: c.Pkg, Version: c.Version, Bin: c.Bin})
	if err != nil {
		return "", err
	}
	if c.Warm != nil {
		if err := c.Warm(bin); err != nil {
			return "", fmt.Errorf("first start of %s: %w", c.id(), err)
		}
	}
	return bin, nil
}

// ---- the world ------------------------------------------------------------

// World is one test's machine: a temp HOME, a project, a marker directory
// outside the project, XDG dirs, a narrowd config file and, once started,
// a real `narrowd serve`.
type World struct {
	t testing.TB

	Root    string // everything below lives here
	Home    string
	Project string // the agent's workspace; has README.md and main.go
	// Outside is a directory outside the project; MarkerFile is in it.
	Outside, MarkerFile string
	// SSHKey is a fake $HOME/.ssh/id_rsa.
	SSHKey string

	RuntimeDir, ConfigHome, StateHome, StateDir, AuditDir string
	Socket                                                string
	HTTPAddr, MetricsAddr                                 string
	// Profile is what the config file names: a built-in name or a file.
	Profile string

	Model *FakeModel

	mu     sync.Mutex
	daemon *exec.Cmd
	done   chan error
	log    *os.File
}

// WorldOptions configures a world.
type WorldOptions struct {
	// Profile is a built-in profile name (default "standard").
	Profile string
	// ProfileTOML, when set, is written to a file the config names instead.
	ProfileTOML string
}

// NewWorld builds a world and its fake model server; call Start to run
// the daemon. Everything is removed when the test ends.
func NewWorld(t testing.TB, opt WorldOptions) *World {
	t.Helper()
	// A short root: the daemon's Unix socket path must stay under 108 bytes.
	root, err := os.MkdirTemp("", "nde2e-")
	if err != nil {
		t.Fatal(err)
	}
	w := &World{t: t, Root: root}
	t.Cleanup(func() {
		w.Stop()
		if t.Failed() {
			t.Logf("narrowd serve log:\n%s", w.DaemonLog())
		}
		if t.Failed() || os.Getenv("NARROWD_E2E_KEEP") == "1" {
			t.Logf("world kept for inspection: %s", root)
			return
		}
		os.RemoveAll(root)
	})
	w.Home = filepath.Join(root, "home")
	w.Project = filepath.Join(root, "proj")
	w.Outside = filepath.Join(root, "outside")
	w.MarkerFile = filepath.Join(w.Outside, "marker.txt")
	w.RuntimeDir = filepath.Join(root, "run")
	w.ConfigHome = filepath.Join(w.Home, ".config")
	w.StateHome = filepath.Join(w.Home, ".local", "state")
	w.StateDir = filepath.Join(w.StateHome, "narrowd")
	w.AuditDir = filepath.Join(w.StateDir, "audit")
	w.Socket = filepath.Join(w.RuntimeDir, "narrowd", "narrowd.sock")
	w.SSHKey = filepath.Join(w.Home, ".ssh", "id_rsa")
	for _, d := range []string{w.Home, w.Project, w.Outside, w.RuntimeDir, w.ConfigHome, filepath.Dir(w.SSHKey)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w.WriteFile(filepath.Join(w.Project, "README.md"), "hello world\nsecond line\n")
	w.WriteFile(filepath.Join(w.Project, "main.go"), "package main\n\nfunc main() {}\n")
	w.WriteFile(w.MarkerFile, "narrowd e2e marker: must survive\n")
	w.WriteFile(w.SSHKey, "-----BEGIN OPENSSH PRIVATE KEY-----\nFAKE-E2E-KEY-DO-NOT-LEAK\n-----END OPENSSH PRIVATE KEY-----\n")

	w.HTTPAddr = freeAddr(t)
	w.MetricsAddr = freeAddr(t)
	w.Profile = opt.Profile
	if w.Profile == "" {
		w.Profile = "standard"
	}
	if opt.ProfileTOML != "" {
		w.Profile = filepath.Join(root, "profile.toml")
		w.WriteFile(w.Profile, opt.ProfileTOML)
	}
	// One config file serves the daemon and the shim's in-process
	// fallback, so both judge with the same profile.
	cfg := fmt.Sprintf("http = %q\nmetrics = %q\nprofile = %q\n", w.HTTPAddr, w.MetricsAddr, w.Profile)
	w.WriteFile(filepath.Join(w.ConfigHome, "narrowd", "config.toml"), cfg)

	w.Model = NewFakeModel(t)
	w.Model.Vars["CWD"] = w.Project
	w.Model.Vars["MARKER"] = w.Outside
	w.Model.Vars["MARKER_FILE"] = w.MarkerFile
	w.Model.Vars["HOME"] = w.Home
	return w
}

// WriteFile writes a file, creating its directory.
func (w *World) WriteFile(path, content string) {
	w.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// freeAddr returns a loopback address with a port nothing listens on now
// and that no outgoing connection will take before the daemon binds it:
// a port below the kernel's ephemeral range, which the fake model's and
// the CLIs' connections draw their local ports from (a port the kernel
// handed out for :0 is in that range, and one CI run lost it to such a
// connection), and never one this test binary handed out before.
func freeAddr(t testing.TB) string {
	t.Helper()
	low := ephemeralLow()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		if portsGiven[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		portsGiven[port] = true
		return addr
	}
	t.Fatal("no free loopback port below the ephemeral range")
	return ""
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// when it cannot be read, or when it leaves too little room below).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low < 12000 {
		return 32768
	}
	return low
}

// Env is the whole environment of a process in this world (env -i style):
// a PATH with node, HOME and the XDG dirs, then extra as KEY=VALUE.
func (w *World) Env(extra ...string) []string {
	env := []string{
		"PATH=" + nodePath(),
		"HOME=" + w.Home,
		"USER=" + os.Getenv("USER"),
		"TERM=dumb",
		"LANG=C.UTF-8",
		"TMPDIR=" + os.TempDir(),
		"XDG_RUNTIME_DIR=" + w.RuntimeDir,
		"XDG_CONFIG_HOME=" + w.ConfigHome,
		"XDG_STATE_HOME=" + w.StateHome,
		"XDG_CACHE_HOME=" + filepath.Join(w.Home, ".cache"),
	}
	return append(env, extra...)
}

// nodePath is the PATH of every process the tests start: the system dirs
// and node's (the npm loaders of some clients are node scripts).
func nodePath() string {
	path := "/usr/local/bin:/usr/bin:/bin"
	if node, err := exec.LookPath("node"); err == nil {
		path = filepath.Dir(node) + ":" + path
	}
	return path
}

// Narrowd runs the narrowd CLI in this world and returns its stdout; a
// non-zero exit fails the test.
func (w *World) Narrowd(stdin string, args ...string) string {
	w.t.Helper()
	res := w.Exec(Run{Bin: narrowdBin, Args: args, Stdin: stdin, Timeout: 30 * time.Second})
	if res.Err != nil {
		w.t.Fatalf("narrowd %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.Err, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// Install runs `narrowd install <agent> --binary <narrowd> args…`, the
// product's own command, with HOME and the XDG dirs of this world.
func (w *World) Install(agent string, args ...string) {
	w.t.Helper()
	out := w.Narrowd("", append([]string{"install", agent, "--binary", narrowdBin}, args...)...)
	w.t.Logf("narrowd install %s %s: %s", agent, strings.Join(args, " "), strings.TrimSpace(out))
}

// Start runs `narrowd serve` (with the world's config file) and waits until
// its socket, HTTP hook listener and metrics answer.
func (w *World) Start() {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.daemon != nil {
		w.t.Fatal("narrowd serve is already running")
	}
	f, err := os.OpenFile(filepath.Join(w.Root, "narrowd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		w.t.Fatal(err)
	}
	cmd := exec.Command(narrowdBin, "serve", "--log-level", "debug")
	cmd.Env = w.Env()
	cmd.Dir = w.Root
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		w.t.Fatalf("start narrowd serve: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	w.daemon, w.done, w.log = cmd, done, f

	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case err := <-done:
			w.daemon = nil
			w.t.Fatalf("narrowd serve exited at start: %v\n%s", err, w.DaemonLog())
		default:
		}
		if w.ready() {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("narrowd serve not ready after 15s\n%s", w.DaemonLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *World) ready() bool {
	if c, err := net.Dial("unix", w.Socket); err != nil {
		return false
	} else {
		c.Close()
	}
	if c, err := net.Dial("tcp", w.HTTPAddr); err != nil {
		return false
	} else {
		c.Close()
	}
	resp, err := http.Get("http://" + w.MetricsAddr + "/metrics")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stop stops the daemon (SIGTERM, then SIGKILL after 10 s) and waits for
// it. Stopping a world without a daemon does nothing.
func (w *World) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.daemon == nil {
		return
	}
	w.daemon.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-w.done:
		if err != nil {
			w.t.Logf("narrowd serve exited: %v", err)
		}
	case <-time.After(10 * time.Second):
		syscall.Kill(-w.daemon.Process.Pid, syscall.SIGKILL)
		<-w.done
		w.t.Errorf("narrowd serve did not stop within 10s of SIGTERM")
	}
	w.daemon = nil
	w.log.Close()
}

// DaemonLog is everything narrowd serve wrote so far.
func (w *World) DaemonLog() string {
	b, _ := os.ReadFile(filepath.Join(w.Root, "narrowd.log"))
	return string(b)
}

// MetricsText scrapes /metrics over real HTTP.
func (w *World) MetricsText() string {
	w.t.Helper()
	resp, err := http.Get("http://" + w.MetricsAddr + "/metrics")
	if err != nil {
		w.t.Fatalf("scrape /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		w.t.Fatalf("scrape /metrics: status %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

// Sample is one sample of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

var sampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)`)
var labelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// ParseMetrics reads the samples of a Prometheus text exposition.
func ParseMetrics(text string) []Sample {
	var out []Sample
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		s := Sample{Name: m[1], Labels: map[string]string{}, Value: v}
		for _, l := range labelRE.FindAllStringSubmatch(m[2], -1) {
			s.Labels[l[1]] = l[2]
		}
		out = append(out, s)
	}
	return out
}

// SumMetric adds up the samples of name whose labels include match.
func SumMetric(samples []Sample, name string, match map[string]string) float64 {
	var sum float64
next:
	for _, s := range samples {
		if s.Name != name {
			continue
		}
		for k, v := range match {
			if s.Labels[k] != v {
				continue next
			}
		}
		sum += s.Value
	}
	return sum
}

// AuditRecord is the part of narrowd's audit line the tests read.
type AuditRecord struct {
	ID                    string `json:"id"`
	ToolName              string `json:"tool_name"`
	Decision              string `json:"decision"`
	PolicyRule            string `json:"policy_rule"`
	Reason                string `json:"reason"`
	Agent                 string `json:"agent"`
	Event                 string `json:"event"`
	Phase                 string `json:"phase"`
	Session               string `json:"session"`
	ToolUseID             string `json:"tool_use_id"`
	Summary               string `json:"summary"`
	Via                   string `json:"via"`
	Answer                string `json:"answer"`
	Outcome               string `json:"outcome"`
	CeilingOutcome        string `json:"ceiling_outcome"`
	PromptAvoided         bool   `json:"prompt_avoided"`
	PromptAvoidedEstimate bool   `json:"prompt_avoided_estimate"`
	SessionKnown          bool   `json:"session_known"`
	Error                 string `json:"error"`
	Verdict               struct {
		Evidence []struct {
			Kind   string `json:"kind"`
			Detail string `json:"detail"`
		} `json:"evidence"`
	} `json:"verdict"`
}

// Audit reads the daemon's audit log (audit.jsonl).
func (w *World) Audit() []AuditRecord {
	w.t.Helper()
	f, err := os.Open(filepath.Join(w.AuditDir, "audit.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	var out []AuditRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			w.t.Fatalf("audit line is not JSON: %v: %s", err, sc.Text())
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// AuditFor returns the audit records of one tool call, by the tool-use id
// the fake model gave it, in order (pre-tool, then a permission request).
func (w *World) AuditFor(toolUseID string) []AuditRecord {
	var out []AuditRecord
	for _, r := range w.Audit() {
		if r.ToolUseID == toolUseID {
			out = append(out, r)
		}
	}
	return out
}

// Verdict is the part of `narrowd check`'s JSON the tests read.
type Verdict struct {
	Decision struct {
		Outcome string `json:"outcome"`
		Rule    string `json:"rule"`
		Reason  string `json:"reason"`
	} `json:"decision"`
	CeilingOutcome string `json:"ceiling_outcome"`
}

// Check asks `narrowd check` (the same engine, offline) for its verdict on
// one hook payload under this world's profile.
func (w *World) Check(agentName string, payload any) Verdict {
	w.t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		w.t.Fatal(err)
	}
	out := w.Narrowd(string(b), "check", "--agent", agentName, "--profile", w.Profile)
	var v Verdict
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		w.t.Fatalf("narrowd check printed no verdict: %v: %s", err, out)
	}
	return v
}

// ---- the client runner ---------------------------------------------------

// Run is one client process to run in a world.
type Run struct {
	Bin  string
	Args []string
	// Env is added to the world's environment.
	Env   []string
	Dir   string // default: the project
	Stdin string
	// Timeout kills the process group (default 60 s).
	Timeout time.Duration
}

// Result is what a run did.
type Result struct {
	Stdout, Stderr string
	Err            error // nil on exit 0
	TimedOut       bool
	Duration       time.Duration
}

// Exec runs r with an env -i style environment in its own process group,
// killing the whole group on timeout.
func (w *World) Exec(r Run) Result {
	w.t.Helper()
	if r.Timeout == 0 {
		r.Timeout = 60 * time.Second
	}
	if r.Dir == "" {
		r.Dir = w.Project
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.Bin, r.Args...)
	cmd.Env = w.Env(r.Env...)
	cmd.Dir = r.Dir
	cmd.Stdin = strings.NewReader(r.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String(), Err: err, Duration: time.Since(start)}
	if ctx.Err() != nil {
		res.TimedOut = true
		res.Err = fmt.Errorf("timed out after %v: %w", r.Timeout, err)
	}
	// Leave no stray children (a client's helper processes) behind.
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return res
}

// ---- the scripted fake model -------------------------------------------

// ToolCall is one tool call a scripted turn makes. Input is JSON text in
// which {{NAME}} placeholders are replaced by the model's Vars ({{CWD}} by
// the CWD= marker of the prompt when it has one).
type ToolCall struct {
	Name  string
	Input string
}

// Turn is one model reply: tool calls, or final text when Calls is empty.
type Turn struct {
	Calls []ToolCall
	Text  string
}

// Scenario is a scripted conversation. The fake model is stateless: it
// picks the scenario by the SCENARIO=<name> marker in the prompt and the
// turn by the number of tool-call turns already in the request's history.
// Past the last turn it answers with final text.
type Scenario struct {
	Name  string
	Turns []Turn
}

// CallID is the generic id of call i in turn; dialects add their prefix
// (toolu_, call_, …), and tests find results by it ([ModelRequest.Result]).
func CallID(turn, i int) string { return fmt.Sprintf("e2e_t%d_c%d", turn, i) }

// EncodedCall is a tool call ready for a dialect to write.
type EncodedCall struct {
	ID    string // CallID(turn, i)
	Name  string
	Input json.RawMessage
}

// ToolResult is a tool result a client sent back to the model.
type ToolResult struct {
	ID      string // as the client sent it
	Text    string
	IsError bool
}

// Decoded is what a dialect reads from a request.
type Decoded struct {
	// Prompt is the user's prompt text (where the markers are).
	Prompt string
	// Turn is the number of tool-call turns the model already took.
	Turn int
	// Results are the tool results in the request's history.
	Results []ToolResult
}

// Dialect is one model API as far as the clients need it.
type Dialect interface {
	// Decode reads a request body.
	Decode(body []byte) (Decoded, error)
	// Write answers one turn: calls when it has any, else text.
	Write(w http.ResponseWriter, r *http.Request, body []byte, calls []EncodedCall, text string)
}

// ModelRequest is one recorded request to the fake model.
type ModelRequest struct {
	Path     string
	Scenario string // "" when the prompt named none
	Turn     int
	Decoded  Decoded
	Body     []byte
}

// Result returns the tool result for CallID(turn, i) in this request's
// history, if any.
func (r ModelRequest) Result(turn, i int) (ToolResult, bool) {
	id := CallID(turn, i)
	for _, res := range r.Decoded.Results {
		if strings.HasSuffix(res.ID, id) {
			return res, true
		}
	}
	return ToolResult{}, false
}

// FakeModel is the fake model server on 127.0.0.1.
type FakeModel struct {
	t   testing.TB
	srv *httptest.Server
	mux *http.ServeMux
	// Vars fill the {{NAME}} placeholders of tool inputs.
	Vars map[string]string

	mu        sync.Mutex
	scenarios map[string]Scenario
	requests  []ModelRequest
	unknown   []string
}

// NewFakeModel starts a fake model server with no dialects; Handle adds
// them. It is closed when the test ends.
func NewFakeModel(t testing.TB) *FakeModel {
	m := &FakeModel{t: t, mux: http.NewServeMux(), Vars: map[string]string{}, scenarios: map[string]Scenario{}}
	m.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.unknown = append(m.unknown, r.Method+" "+r.URL.String())
		m.mu.Unlock()
		http.NotFound(w, r)
	})
	m.srv = httptest.NewServer(m.mux)
	t.Cleanup(m.srv.Close)
	return m
}

// URL is the server's base URL (http://127.0.0.1:PORT, no path).
func (m *FakeModel) URL() string { return m.srv.URL }

// Add registers scenarios.
func (m *FakeModel) Add(scs ...Scenario) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range scs {
		m.scenarios[s.Name] = s
	}
}

// Requests returns the requests recorded so far for a scenario ("" for
// every request).
func (m *FakeModel) Requests(scenario string) []ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ModelRequest
	for _, r := range m.requests {
		if scenario == "" || r.Scenario == scenario {
			out = append(out, r)
		}
	}
	return out
}

// Last returns the last request of a scenario: its history holds every
// tool result of the run. It fails the test when there is none.
func (m *FakeModel) Last(scenario string) ModelRequest {
	m.t.Helper()
	reqs := m.Requests(scenario)
	if len(reqs) == 0 {
		m.t.Fatalf("the client sent no request for scenario %s (unknown paths: %v)", scenario, m.Unknown())
	}
	return reqs[len(reqs)-1]
}

// Unknown lists requests to paths no dialect handles.
func (m *FakeModel) Unknown() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.unknown...)
}

var (
	scenarioRE = regexp.MustCompile(`SCENARIO=([A-Za-z0-9_.-]+)`)
	cwdRE      = regexp.MustCompile(`CWD=(/\S+)`)
)

// Handle serves dialect d at pattern (a net/http ServeMux pattern).
func (m *FakeModel) Handle(pattern string, d Dialect) {
	m.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		dec, err := d.Decode(body)
		if err != nil {
			m.t.Errorf("fake model: %s: undecodable request: %v", r.URL.Path, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := ModelRequest{Path: r.URL.Path, Turn: dec.Turn, Decoded: dec, Body: body}
		vars := map[string]string{}
		m.mu.Lock()
		for k, v := range m.Vars {
			vars[k] = v
		}
		var sc Scenario
		var ok bool
		if mm := scenarioRE.FindStringSubmatch(dec.Prompt); mm != nil {
			req.Scenario = mm[1]
			sc, ok = m.scenarios[mm[1]]
		}
		m.requests = append(m.requests, req)
		seen := 0
		for _, r := range m.requests {
			if ok && r.Scenario == sc.Name {
				seen++
			}
		}
		m.mu.Unlock()
		// A client that does not see its own history would loop forever.
		if ok && seen > 2*len(sc.Turns)+4 {
			m.t.Errorf("fake model: scenario %s got %d requests for %d turns; stopping it", sc.Name, seen, len(sc.Turns))
			d.Write(w, r, body, nil, "stop")
			return
		}
		if mm := cwdRE.FindStringSubmatch(dec.Prompt); mm != nil {
			vars["CWD"] = mm[1]
		}
		if !ok || dec.Turn >= len(sc.Turns) || len(sc.Turns[dec.Turn].Calls) == 0 {
			text := "done"
			if ok && dec.Turn < len(sc.Turns) && sc.Turns[dec.Turn].Text != "" {
				text = sc.Turns[dec.Turn].Text
			}
			d.Write(w, r, body, nil, text)
			return
		}
		var calls []EncodedCall
		for i, c := range sc.Turns[dec.Turn].Calls {
			in := expand(c.Input, vars)
			if !json.Valid([]byte(in)) {
				m.t.Errorf("scenario %s turn %d call %d: input is not JSON after expansion: %s", sc.Name, dec.Turn, i, in)
			}
			calls = append(calls, EncodedCall{ID: CallID(dec.Turn, i), Name: c.Name, Input: json.RawMessage(in)})
		}
		d.Write(w, r, body, calls, "")
	})
}

// expand replaces {{NAME}} with vars[NAME], JSON-string-escaped (inputs
// are JSON text and the values are paths).
func expand(s string, vars map[string]string) string {
	for k, v := range vars {
		q, _ := json.Marshal(v)
		s = strings.ReplaceAll(s, "{{"+k+"}}", string(q[1:len(q)-1]))
	}
	return s
}

// ---- listeners a test owns ----------------------------------------------

// Sink is an HTTP listener on loopback that records every request; a
// curl to it that narrowd refused must leave it empty.
type Sink struct {
	URL  string
	mu   sync.Mutex
	hits []string
}

// NewSink starts a sink, closed when the test ends.
func NewSink(t testing.TB, body string) *Sink {
	s := &Sink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, r.Method+" "+r.URL.String())
		s.mu.Unlock()
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Hits returns the requests the sink received.
func (s *Sink) Hits() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hits...)
}

// ---- assertions ----------------------------------------------------------

// mustExist fails unless path exists with content (when non-empty).
func mustExist(t testing.TB, path, content string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v (it must exist)", path, err)
		return
	}
	if content != "" && string(b) != content {
		t.Errorf("%s holds %q, want %q", path, b, content)
	}
}

// mustNotExist fails if path exists.
func mustNotExist(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("%s exists; the call that creates it must not have run", path)
	}
}
