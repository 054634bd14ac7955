package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/daemon/hookclient"
	"github.com/narrowd/narrowd/rules"
)

// The shim protocol on the Unix socket.
const (
	// HookPath is the shim's endpoint; {agent} is the agent's name or
	// "auto".
	HookPath = hookclient.HookPath
	// StatusPath answers `narrowd status`.
	StatusPath = "/v1/status"
	// ReplyType is the media type of the shim's reply envelope.
	ReplyType = hookclient.ReplyType
)

// Envelope is the daemon's answer to the shim: the agent's reply and the
// audit id of the call.
type Envelope struct {
	agent.Reply
	// ID is the audit record id; empty for calls that make no decision
	// (post-tool events).
	ID string `json:"id,omitempty"`
}

// peerListener hands out connections that remember their peer's uid.
type peerListener struct{ net.Listener }

func (l *peerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &peerConn{Conn: c}, nil
}

// peerConn looks its peer's uid up once, lazily, in the first request's
// goroutine (not in the accept loop: the /proc/net scan for TCP costs).
type peerConn struct {
	net.Conn
	once sync.Once
	uid  uint32
	err  error
}

func (c *peerConn) peer() (uint32, error) {
	c.once.Do(func() { c.uid, c.err = peerUID(c.Conn, "/proc/net") })
	return c.uid, c.err
}

type connKey struct{}

func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// samePeer lets a request through only when its connection comes from the
// daemon's own uid; others get 403 and are counted.
func (s *Server) samePeer(h http.Handler) http.Handler {
	self := uint32(os.Getuid())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pc, _ := r.Context().Value(connKey{}).(*peerConn)
		var uid uint32
		err := errors.New("connection has no peer information")
		if pc != nil {
			uid, err = pc.peer()
		}
		if err != nil || uid != self {
			s.metrics.peerRejections.Inc()
			s.log.Warn("refused a connection from another user", "uid", uid, "err", err, "remote", r.RemoteAddr)
			w.Header().Set("Connection", "close")
			http.Error(w, "narrowd: forbidden: not the daemon's user", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) unixHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+HookPath+"{agent}", s.serveShim)
	mux.HandleFunc("GET "+StatusPath, s.serveStatus)
	mux.HandleFunc("POST "+hookclient.ExecClaimPath, s.serveExecClaim)
	mux.HandleFunc("POST "+hookclient.ExecVerifyPath, s.serveExecVerify)
	mux.HandleFunc("POST "+hookclient.ExecDonePath, s.serveExecDone)
	return s.samePeer(mux)
}

func (s *Server) tcpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hook/claude", s.serveClaudeHTTP)
	return s.samePeer(mux)
}

func (s *Server) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.Handler())
	return s.samePeer(mux)
}

// readPayload reads a request body of at most agent.MaxPayload bytes.
func readPayload(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, agent.MaxPayload)
	return io.ReadAll(body)
}

// interactive reads the call's interactive=0|1 query parameter (the raw
// query string), falling back to the daemon's default.
func (s *Server) interactive(query string) bool {
	return s.interactiveIn(parseQuery(query))
}

// interactiveIn is [Server.interactive] on a parsed query.
func (s *Server) interactiveIn(q url.Values) bool {
	if v := q.Get("interactive"); v != "" {
		b, err := strconv.ParseBool(v)
		return err == nil && b
	}
	return s.cfg.Interactive
}

// parseQuery is r.URL.Query() on a raw query string (a malformed pair is
// skipped); nil for none. The shim's query is parsed once per call.
func parseQuery(query string) url.Values {
	if query == "" {
		return nil
	}
	q, _ := url.ParseQuery(query)
	return q
}

// queryDeadline is the shim's deadline in a parsed query (the zero time
// if it sent none or a malformed one).
func queryDeadline(q url.Values) time.Time {
	ms, err := strconv.ParseInt(q.Get(hookclient.DeadlineParam), 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// serveShim answers the shim: the request body is the agent's raw payload,
// the optional event query parameter the hook's configured event (narrowd
// hook --event), the response [Server.shimAnswer].
func (s *Server) serveShim(w http.ResponseWriter, r *http.Request) {
	payload, err := readPayload(w, r)
	body := s.shimAnswer(r.PathValue("agent"), r.URL.RawQuery, r.Header.Get("Accept"), payload, err, w.Header().Set, nil)
	// Whole, so the reply carries a Content-Length.
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// shimAnswer judges one shim call, given its payload or the error reading
// it, and appends the answer to body: the raw reply for a client that
// accepts it, else the JSON [Envelope]. header receives the response's
// headers but Content-Length. Every failure the daemon can still answer is
// a blocking reply, never an HTTP error, so the shim does not fall back to
// judging a call the daemon already refused. serveShim and the fast path
// both answer with it.
func (s *Server) shimAnswer(name, query, accept string, payload []byte, readErr error, header func(k, v string), body []byte) []byte {
	var env Envelope
	if readErr != nil {
		env.Reply = s.refuse(name, "socket", readErr)
	} else {
		q := parseQuery(query)
		opt := agent.Options{Interactive: s.interactiveIn(q)}
		env.Reply, env.ID = s.handle(name, q.Get("event"), payload, "socket", opt, queryDeadline(q))
	}
	if accept == hookclient.RawReplyType {
		header("Content-Type", hookclient.RawReplyType)
		header(hookclient.ExitCodeHeader, strconv.Itoa(env.ExitCode))
		header(hookclient.StdoutLengthHeader, strconv.Itoa(len(env.Stdout)))
		if env.ID != "" {
			header(hookclient.IDHeader, env.ID)
		}
		return append(append(body, env.Stdout...), env.Stderr...)
	}
	b, _ := json.Marshal(env)
	header("Content-Type", ReplyType)
	return append(append(body, b...), '\n')
}

// serveClaudeHTTP answers Claude Code's http hook with [Server.claudeAnswer].
func (s *Server) serveClaudeHTTP(w http.ResponseWriter, r *http.Request) {
	payload, err := readPayload(w, r)
	body := s.claudeAnswer(r.URL.RawQuery, payload, err, nil)
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// claudeAnswer judges one call of Claude Code's http hook, given its
// payload or the error reading it, and appends Claude's JSON reply to body.
// Claude ignores status codes and treats an empty 2xx body as no
// objection, so every block is JSON in a 200 body.
func (s *Server) claudeAnswer(query string, payload []byte, readErr error, body []byte) []byte {
	var reply agent.Reply
	if readErr != nil {
		reply = s.refuse(agent.Claude, "http", readErr)
	} else {
		reply, _ = s.Handle(agent.Claude, payload, "http", agent.Options{Interactive: s.interactive(query)})
	}
	if reply.ExitCode != 0 && len(reply.Stdout) == 0 {
		// A block that lives only in the exit code would be lost here.
		reply = agent.Fail(agent.Claude, rules.Call{}, "narrowd's reply could not be sent over http")
	}
	return append(body, reply.Stdout...)
}

// refuse answers a request whose body could not be read (too large, cut
// off, too slow) with a blocking reply, and counts it.
func (s *Server) refuse(name, via string, err error) agent.Reply {
	reason := "the hook payload could not be read"
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		reason = "the hook payload is larger than narrowd accepts"
	}
	s.log.Warn("refused a hook payload", "agent", name, "via", via, "err", err)
	s.metrics.decisions.WithLabelValues(agentLabel(name), "other", "error").Inc()
	return agent.Fail(name, rules.Call{}, reason)
}

// Status is what `narrowd status` shows.
type Status struct {
	PID            int       `json:"pid"`
	Version        string    `json:"version"`
	Started        time.Time `json:"started"`
	Socket         string    `json:"socket"`
	Profile        string    `json:"profile"`
	AuditDir       string    `json:"audit_dir"`
	StateDir       string    `json:"state_dir"`
	AllowAtPreTool bool      `json:"allow_at_pre_tool"`
	Interactive    bool      `json:"interactive"`
	LastReloadErr  string    `json:"last_reload_error,omitempty"`
	// AuditSync says when audit records are fsynced: "before answer",
	// or "within D" after it.
	AuditSync string `json:"audit_sync"`
	// Sandbox reports that this daemon issues tickets for narrowd exec,
	// each redeemable for TicketTTL; SandboxWrapper is the command the
	// rewrites start with (narrowd-exec, or narrowd exec).
	Sandbox        bool   `json:"sandbox"`
	TicketTTL      string `json:"ticket_ttl,omitempty"`
	SandboxWrapper string `json:"sandbox_wrapper,omitempty"`
	// Snapshots is the snapshot store's directory, or "off";
	// SnapshotKeep how long snapshots are kept ("forever" when never
	// pruned).
	Snapshots    string `json:"snapshots"`
	SnapshotKeep string `json:"snapshot_keep,omitempty"`
	// MCP is discovery's view; absent when discovery is off.
	MCP *MCPStatus `json:"mcp,omitempty"`
}

func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request) {
	s.reloadMu.Lock()
	lre := s.lastReloadErr
	s.reloadMu.Unlock()
	st := Status{
		PID:            os.Getpid(),
		Version:        s.cfg.Version,
		Started:        s.started,
		Socket:         s.cfg.SocketPath,
		Profile:        s.cfg.Engine.Profile,
		AuditDir:       s.cfg.AuditDir,
		StateDir:       s.cfg.StateDir,
		AllowAtPreTool: s.cfg.AllowAtPreTool,
		Interactive:    s.cfg.Interactive,
		LastReloadErr:  lre,
		AuditSync:      "before answer",
		Sandbox:        s.tickets != nil,
		Snapshots:      "off",
		MCP:            s.mcpStatus(),
	}
	if d := s.cfg.AuditSyncWithin; d > 0 {
		st.AuditSync = "within " + d.String()
	}
	if s.tickets != nil {
		st.TicketTTL, st.SandboxWrapper = s.tickets.ttl.String(), s.tickets.wrapper
	}
	if d := s.cfg.Engine.SnapshotDir; d != "" {
		st.Snapshots, st.SnapshotKeep = d, s.cfg.SnapshotKeep.String()
		if s.cfg.SnapshotKeep < 0 {
			st.SnapshotKeep = "forever"
		}
	}
	if st.Profile == "" {
		st.Profile = "standard"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(st)
}
