package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/narrowd/narrowd/rules"
)

// Limits bound what one server may cost narrowd. Zero fields take the
// defaults in [DefaultLimits].
type Limits struct {
	// Timeout bounds the whole listing of one server: start, initialize
	// and every page of tools/list.
	Timeout time.Duration
	// MaxTools is the most tools one server may list; more fails the
	// server (a partial list would label a different server than the
	// agent sees).
	MaxTools int
	// MaxPages bounds pagination.
	MaxPages int
	// MaxBytes bounds one message from the server, the whole HTTP body
	// of one response, and the tool list over all its pages.
	MaxBytes int
	// MaxToolBytes bounds one tool definition.
	MaxToolBytes int
}

// DefaultLimits are generous for real servers (the largest list tens of
// tools) and small for the daemon.
var DefaultLimits = Limits{
	Timeout:      20 * time.Second,
	MaxTools:     1000,
	MaxPages:     50,
	MaxBytes:     8 << 20,
	MaxToolBytes: 256 << 10,
}

func (l Limits) fill() Limits {
	d := DefaultLimits
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	if l.MaxTools <= 0 {
		l.MaxTools = d.MaxTools
	}
	if l.MaxPages <= 0 {
		l.MaxPages = d.MaxPages
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxToolBytes <= 0 {
		l.MaxToolBytes = d.MaxToolBytes
	}
	return l
}

// Tool is one tool as a server listed it.
type Tool struct {
	// Name is the tool's name on its server.
	Name string `json:"name"`
	// Key is server/tool (spec §1).
	Key string `json:"key"`
	// DefHash is the spec §1 hash of Definition.
	DefHash string `json:"def_hash"`
	// Definition is the tools/list entry exactly as the server sent it:
	// data to show a person, never instructions to follow.
	Definition json.RawMessage `json:"definition"`
}

// Lister lists one server's tools.
type Lister struct {
	// Launcher starts stdio servers; nil means [NamespaceLauncher].
	Launcher Launcher
	Limits   Limits
	// Version is narrowd's version, sent in initialize.
	Version string
}

// List connects to s, runs tools/list through every page, and returns
// its tools in the order listed. Any failure, limit or malformed entry
// fails the whole server.
func (l *Lister) List(ctx context.Context, s Server) ([]Tool, error) {
	lim := l.Limits.fill()
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	var (
		inner  sdk.Transport
		stop   = func() {}
		stderr *tail
	)
	switch s.Transport {
	case Stdio:
		launcher := l.Launcher
		if launcher == nil {
			launcher = NamespaceLauncher{}
		}
		stderr = &tail{max: 1024}
		t, st, err := startStdio(ctx, launcher, s, lim, stderr)
		if err != nil {
			return nil, err
		}
		inner, stop = t, sync.OnceFunc(st)
	case HTTP, SSE:
		hc := &http.Client{
			Transport: &limitedTransport{headers: s.Headers, max: int64(lim.MaxBytes)},
			// The configured headers go to the configured URL only:
			// a redirect is an answer, not a new place to send them.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		if s.Transport == HTTP {
			inner = &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true, MaxEventSize: lim.MaxBytes}
		} else {
			inner = &sdk.SSEClientTransport{Endpoint: s.URL, HTTPClient: hc, MaxEventSize: lim.MaxBytes}
		}
	default:
		return nil, fmt.Errorf("unknown transport %q", s.Transport)
	}
	defer stop()
	capture := &captureTransport{inner: inner}
	client := sdk.NewClient(&sdk.Implementation{Name: "narrowd", Version: l.Version},
		&sdk.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	type result struct {
		tools []Tool
		err   error
	}
	done := make(chan result, 1)
	// The SDK is not trusted to honour ctx everywhere: the listing runs
	// aside and the deadline wins.
	go func() {
		tools, err := l.list(ctx, client, capture, s, lim)
		done <- result{tools, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		capture.close()
		r.err = fmt.Errorf("server %s: %w", s.Name, ctx.Err())
	}
	if r.err != nil && stderr != nil {
		// What a server that failed said: it ran confined, and a server
		// that needs what the sandbox hides says so here.
		stop()
		if msg := stderr.String(); msg != "" {
			r.err = fmt.Errorf("%w (its stderr: %q)", r.err, msg)
		}
	}
	return r.tools, r.err
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

func (l *Lister) list(ctx context.Context, client *sdk.Client, capture *captureTransport, s Server, lim Limits) ([]Tool, error) {
	sess, err := client.Connect(ctx, capture, nil)
	if err != nil {
		return nil, fmt.Errorf("server %s: connect: %w", s.Name, err)
	}
	defer sess.Close()
	var tools []Tool
	names := map[string]bool{}
	cursor := ""
	cursors := map[string]bool{}
	total := 0
	for page := 0; ; page++ {
		if page >= lim.MaxPages {
			return nil, fmt.Errorf("server %s: more than %d pages of tools", s.Name, lim.MaxPages)
		}
		if _, err := sess.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor}); err != nil {
			return nil, fmt.Errorf("server %s: tools/list: %w", s.Name, err)
		}
		raw, ok := capture.take()
		if !ok {
			return nil, fmt.Errorf("server %s: tools/list answer not seen", s.Name)
		}
		if total += len(raw); total > lim.MaxBytes {
			return nil, fmt.Errorf("server %s: its tool list is larger than %d bytes", s.Name, lim.MaxBytes)
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("server %s: tools/list: %w", s.Name, err)
		}
		if len(tools)+len(res.Tools) > lim.MaxTools {
			return nil, fmt.Errorf("server %s: more than %d tools", s.Name, lim.MaxTools)
		}
		for _, def := range res.Tools {
			t, err := toolOf(s.Name, def, lim)
			if err != nil {
				return nil, fmt.Errorf("server %s: %w", s.Name, err)
			}
			if names[t.Name] {
				return nil, fmt.Errorf("server %s: tool %q listed twice", s.Name, t.Name)
			}
			names[t.Name] = true
			tools = append(tools, t)
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		if cursors[res.NextCursor] {
			return nil, fmt.Errorf("server %s: pagination loops", s.Name)
		}
		cursors[res.NextCursor] = true
		cursor = res.NextCursor
	}
}

// toolOf checks one tools/list entry and hashes it as listed.
func toolOf(server string, def json.RawMessage, lim Limits) (Tool, error) {
	if len(def) > lim.MaxToolBytes {
		return Tool{}, fmt.Errorf("a tool definition is larger than %d bytes", lim.MaxToolBytes)
	}
	var head struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(def, &head); err != nil {
		return Tool{}, fmt.Errorf("tool definition: %w", err)
	}
	if !validToolName(head.Name) {
		return Tool{}, fmt.Errorf("tool name %q is not 1-128 printable characters without '/'", head.Name)
	}
	h, err := rules.DefHash(def)
	if err != nil {
		return Tool{}, fmt.Errorf("tool %q: %w", head.Name, err)
	}
	return Tool{Name: head.Name, Key: server + "/" + head.Name, DefHash: h, Definition: bytes.Clone(def)}, nil
}

// validToolName keeps keys readable and unambiguous: no slash (the key's
// separator), no control characters, 1 to 128 characters.
func validToolName(n string) bool {
	if n == "" || utf8.RuneCountInString(n) > 128 || !utf8.ValidString(n) {
		return false
	}
	for _, r := range n {
		if r < 0x20 || r == 0x7f || r == '/' || r == '\\' || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// startStdio starts a stdio server through the launcher and returns a
// transport over its pipes and a stop function that kills its whole
// process group; the server's stderr goes to stderr.
func startStdio(ctx context.Context, launcher Launcher, s Server, lim Limits, stderr io.Writer) (sdk.Transport, func(), error) {
	cmd, cleanup, err := launcher.Command(ctx, s)
	if err != nil {
		return nil, nil, fmt.Errorf("server %s: %w", s.Name, err)
	}
	ok := false
	defer func() {
		if !ok {
			cleanup()
		}
	}()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("server %s: start: %w", s.Name, err)
	}
	waited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(waited)
	}()
	ok = true
	stop := func() {
		stdin.Close()
		killGroup(cmd)
		<-waited
		cleanup()
	}
	return &sdk.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: lim.MaxBytes}, stop, nil
}

// killGroup kills the server with its process group. Both launchers
// make the server (or narrowd exec, for ExecLauncher) the parent of a
// PID namespace whose init dies with it, so nothing the server started
// outlives the kill, even in a session of its own.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.Process.Kill()
}

// captureTransport keeps the raw result of each tools/list answer: the
// SDK's Tool type drops fields it does not know and rewrites others
// (readOnlyHint:false appears even when the server sent nothing), and
// def_hash must cover the definition as the server listed it. The SDK
// still runs the protocol (initialize, pagination requests); the pages
// are read here.
type captureTransport struct {
	inner sdk.Transport

	mu      sync.Mutex
	conn    sdk.Connection
	pending map[string]bool
	pages   [][]byte
}

func (t *captureTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.conn = c
	t.pending = map[string]bool{}
	t.mu.Unlock()
	return &captureConn{Connection: c, t: t}, nil
}

func (t *captureTransport) close() {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// take returns the oldest captured tools/list result.
func (t *captureTransport) take() ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pages) == 0 {
		return nil, false
	}
	p := t.pages[0]
	t.pages = t.pages[1:]
	return p, true
}

var emptyPage = json.RawMessage(`{"tools":[]}`)

type captureConn struct {
	sdk.Connection
	t *captureTransport
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

func (c *captureConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && req.ID.IsValid() {
		c.t.mu.Lock()
		c.t.pending[idKey(req.ID)] = true
		c.t.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && resp.ID.IsValid() {
		k := idKey(resp.ID)
		c.t.mu.Lock()
		if c.t.pending[k] {
			delete(c.t.pending, k)
			if resp.Error == nil {
				c.t.pages = append(c.t.pages, bytes.Clone(resp.Result))
				// narrowd reads the page itself; the SDK gets an empty
				// one, so it never decodes (and validates) a hostile
				// server's thousands of tools.
				resp.Result = emptyPage
			}
		}
		c.t.mu.Unlock()
	}
	return msg, err
}

// limitedTransport adds a server's configured headers and bounds every
// response body.
type limitedTransport struct {
	headers map[string]string
	max     int64
}

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.max}
	return resp, nil
}

var errTooLarge = errors.New("server response larger than the limit")

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
