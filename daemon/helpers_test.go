package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	dto "github.com/prometheus/client_model/go"

	"github.com/narrowd/narrowd/internal/testenv"
)

// testDaemon is a Server serving on real sockets: a Unix socket, a
// loopback HTTP listener and a metrics listener.
type testDaemon struct {
	*Server
	cfg     Config
	socket  string
	httpURL string
	metrics string
	cancel  context.CancelFunc
	done    chan error
}

// shortDir returns a temporary directory with a short path, for Unix
// socket names (sun_path is 108 bytes).
func shortDir(t testing.TB) string {
	d, err := os.MkdirTemp("", "nd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// startDaemon builds a Server from a test config (changed by mod) and
// serves it until the test ends.
func startDaemon(t testing.TB, mod func(*Config)) *testDaemon {
	t.Helper()
	dir := shortDir(t)
	cfg := Config{
		SocketPath: filepath.Join(dir, "run", "narrowd.sock"),
		AuditDir:   filepath.Join(dir, "audit"),
		StateDir:   filepath.Join(dir, "state"),
		Logger:     testLogger(t),
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ux, err := Listen(cfg.SocketPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hl, err := ListenLoopback(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ml, err := ListenLoopback(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &testDaemon{
		Server:  s,
		cfg:     s.cfg,
		socket:  cfg.SocketPath,
		httpURL: "http://" + hl.Addr().String(),
		metrics: "http://" + ml.Addr().String() + "/metrics",
		cancel:  cancel,
		done:    make(chan error, 1),
	}
	go func() {
		err := s.Serve(ctx, Listeners{Unix: ux, HTTP: hl, Metrics: ml})
		d.done <- errors.Join(err, s.Close())
	}()
	t.Cleanup(func() { d.stop(t) })
	return d
}

// stop shuts the daemon down and waits for Serve to return.
func (d *testDaemon) stop(t testing.TB) {
	d.cancel()
	select {
	case err, ok := <-d.done:
		if ok && err != nil {
			t.Errorf("serve: %v", err)
		}
		close(d.done)
	case <-time.After(20 * time.Second):
		t.Errorf("daemon did not stop")
	}
}

func (d *testDaemon) client() *Client { return &Client{Socket: d.socket, Timeout: 10 * time.Second} }

// postClaude sends a payload to the Claude http hook endpoint.
func (d *testDaemon) postClaude(c *http.Client, payload []byte) (int, []byte, error) {
	resp, err := c.Post(d.httpURL+"/hook/claude", "application/json", strings.NewReader(string(payload)))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// scrape fetches /metrics over HTTP and parses the exposition format.
func (d *testDaemon) scrape(t testing.TB) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(d.metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

// metricSum sums a family's counter (or gauge) values over the series
// whose labels include want.
func metricSum(mf map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := mf[name]
	if f == nil {
		return 0
	}
	var sum float64
outer:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue outer
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// claudePayload is a Claude Code hook payload.
func claudePayload(event, session, tool string, input map[string]any) []byte {
	m := map[string]any{
		"session_id":      session,
		"transcript_path": "/t/" + session + ".jsonl",
		"cwd":             "/tmp",
		"prompt_id":       "p1",
		"permission_mode": "default",
		"hook_event_name": event,
		"tool_name":       tool,
		"tool_input":      input,
	}
	if event != "PermissionRequest" {
		m["tool_use_id"] = "toolu_" + session
	}
	if event == "PostToolUse" {
		m["tool_response"] = "done"
	}
	b, _ := json.Marshal(m)
	return b
}

// mcpCall is a call to an MCP tool nobody labelled: whatever the
// profile, never an allow.
func mcpCall(session string) []byte {
	return claudePayload("PreToolUse", session, "mcp__evil__wipe", map[string]any{"target": "prod"})
}

// auditIDs reads every record id in an audit directory.
func auditIDs(t testing.TB, dir string) map[string]*Record {
	t.Helper()
	ids := map[string]*Record{}
	if err := ReadAudit(dir, func(r *Record) error {
		ids[r.ID] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

func narrowdBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the narrowd binary")
	}
	bin, err := testenv.Narrowd()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// startBinary runs `narrowd serve` from the built binary and waits until
// its socket answers.
func startBinary(t testing.TB, bin, dir string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	sock := filepath.Join(dir, "run", "narrowd.sock")
	args := append([]string{"serve", "--socket", sock, "--state-dir", filepath.Join(dir, "state")}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	cmd.Stderr = testWriter{t}
	testenv.Serve(t, cmd, sock)
	return cmd, sock
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// waitStopped waits up to ten seconds for the daemon's Serve to return,
// fails on its error, and leaves a nil result for the cleanup.
func (d *testDaemon) waitStopped(t testing.TB) {
	t.Helper()
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatal(err)
		}
		d.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not stop")
	}
}
