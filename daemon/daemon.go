package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Listeners are the sockets the daemon serves. Unix is required; HTTP and
// Metrics are optional.
type Listeners struct {
	// Unix is the shim's socket (from [Listen] or [ActivationListener]).
	Unix net.Listener
	// Activated reports that Unix came from systemd socket activation:
	// systemd owns the socket file, so shutdown leaves it in place.
	Activated bool
	// HTTP is a loopback TCP listener answering agents' HTTP hooks
	// (Claude Code's "type":"http"); nil to serve none.
	HTTP net.Listener
	// Metrics is a loopback TCP listener serving /metrics; nil to serve
	// none.
	Metrics net.Listener
}

// Server is the running daemon: the current engine, the audit log, session
// history and metrics, and the handlers that tie them together. Build it
// with [New], serve with [Server.Serve], and [Server.Close] it.
type Server struct {
	cfg      Config
	log      *slog.Logger
	engine   atomic.Pointer[Engine]
	metrics  *Metrics
	audit    *Audit
	sessions *Sessions
	started  time.Time
	// tickets is nil when this daemon cannot run narrowd's sandbox.
	tickets *tickets
	admit   *admission

	reloadMu      sync.Mutex
	lastReloadErr string
}

// New builds the engine, opens the audit log and session history, and
// registers the metrics. A profile that does not load is an error: the
// daemon does not start on a bad profile.
func New(cfg Config) (*Server, error) {
	cfg.fill()
	if cfg.StateDir == "" {
		return nil, errors.New("no state directory")
	}
	if cfg.AuditDir == "" {
		return nil, errors.New("no audit directory")
	}
	tickets := newTickets(cfg)
	cfg.Engine.Sandbox = tickets != nil
	// What the daemon keeps is narrowd's own: no agent call may change it.
	cfg.Engine.OwnFiles = slices.Concat(cfg.Engine.OwnFiles, []string{cfg.StateDir, cfg.AuditDir}, cfg.Watch)
	if cfg.SocketPath != "" {
		cfg.Engine.OwnFiles = append(cfg.Engine.OwnFiles, filepath.Dir(cfg.SocketPath))
	}
	cfg.Engine.SandboxUndo = tickets != nil && tickets.undo != nil
	if cfg.MCP != nil {
		// Discovery resolves, and learns the projects calls come from.
		cfg.Engine.MCP = cfg.MCP
	}
	e, err := NewEngine(cfg.Engine)
	if err != nil {
		return nil, fmt.Errorf("failed to build engine: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, metrics: NewMetrics(cfg.Version), started: cfg.now(), tickets: tickets, admit: newAdmission()}
	s.engine.Store(e)
	if cfg.MCP != nil {
		s.metrics.watchMCP(cfg.MCP.Registry, func(key, hash string) string { return s.engine.Load().MCPLabelState(key, hash) })
	}
	if s.audit, err = OpenAudit(cfg.AuditDir, AuditOptions{
		MaxSize:    cfg.AuditMaxSize,
		Keep:       cfg.AuditKeep,
		Timeout:    cfg.AuditTimeout,
		SyncWithin: cfg.AuditSyncWithin,
	}, cfg.Logger); err != nil {
		return nil, err
	}
	if s.sessions, err = OpenSessions(cfg.StateDir, cfg.Logger); err != nil {
		s.audit.Close()
		return nil, err
	}
	return s, nil
}

// Metrics returns the server's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Close flushes and closes the audit log and session history. Call it
// after Serve has returned.
func (s *Server) Close() error {
	return errors.Join(s.audit.Close(), s.sessions.Close())
}

// Run is New, Serve and Close: it serves until ctx is done, then shuts
// down gracefully, answering every call already in flight.
func Run(ctx context.Context, cfg Config, ls Listeners) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	serr := s.Serve(ctx, ls)
	return errors.Join(serr, s.Close())
}

// Serve answers hook calls on the listeners until ctx is done, then stops
// accepting, waits (up to Config.ShutdownTimeout) for calls in flight to
// be answered, and returns. It tells systemd READY=1 once serving and
// STOPPING=1 when shutting down, and watches the profile for changes.
func (s *Server) Serve(ctx context.Context, ls Listeners) error {
	if ls.Unix == nil {
		return errors.New("no unix listener")
	}
	socketID := s.socketIdentity(ls)
	tuneGC()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type served struct {
		srv interface {
			Serve(net.Listener) error
			Shutdown(context.Context) error
		}
		ln net.Listener
	}
	var all []served
	// The shims' calls on the socket and Claude Code's http hooks send
	// one shape of request: the fast path answers those, net/http the
	// rest.
	all = append(all, served{s.newFastServer(s.httpServer(ctx, s.unixHandler()), unixRoute), &peerListener{Listener: ls.Unix}})
	if ls.HTTP != nil {
		fast := s.newFastServer(s.httpServer(ctx, s.tcpHandler()), tcpRoute)
		all = append(all, served{fast, &peerListener{Listener: ls.HTTP}})
	}
	if ls.Metrics != nil {
		all = append(all, served{s.httpServer(ctx, s.metricsHandler()), &peerListener{Listener: ls.Metrics}})
	}

	errc := make(chan error, len(all))
	for _, sv := range all {
		go func() {
			if err := sv.srv.Serve(sv.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("serving %s: %w", sv.ln.Addr(), err)
				return
			}
			errc <- nil
		}()
	}

	var wg sync.WaitGroup
	wg.Go(func() { s.watch(ctx) })
	wg.Go(func() { s.pruneSnapshots(ctx) })
	if s.cfg.MCP != nil {
		// Discovery runs aside: a slow or hostile server delays only
		// its own tools, which stay unlabelled meanwhile.
		wg.Go(func() { s.cfg.MCP.Run(ctx) })
	}

	if err := Notify(s.cfg.NotifySocket, "READY=1\nSTATUS=serving"); err != nil {
		s.log.Warn("sd_notify failed", "err", err)
	}
	s.log.Info("serving", "socket", ls.Unix.Addr().String(), "http", addrOf(ls.HTTP), "metrics", addrOf(ls.Metrics))

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	if err := Notify(s.cfg.NotifySocket, "STOPPING=1"); err != nil {
		s.log.Warn("sd_notify failed", "err", err)
	}
	s.log.Info("shutting down")
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer scancel()
	var shutErrs []error
	for _, sv := range all {
		if err := sv.srv.Shutdown(sctx); err != nil {
			shutErrs = append(shutErrs, err)
		}
	}
	cancel()
	wg.Wait()
	s.removeSocket(socketID)
	if len(shutErrs) > 0 {
		return errors.Join(append([]error{serveErr}, shutErrs...)...)
	}
	return serveErr
}

// serveGCPercent is the garbage collector's target while serving, unless
// GOGC says otherwise. The daemon's live heap is small (~10 MB: command
// knowledge, CEL programs) and every decision allocates ~10 KB, so with
// Go's default of 100 it collected every ~1,000 decisions, ~10 us of CPU
// per decision. 200 halves that for ~8 MB more RSS (47 MB at peak under
// 64 concurrent clients, within the 50 MB target; 400 went to 62 MB).
const serveGCPercent = 200

// serveMemoryLimit is the soft limit on the Go heap and runtime while
// serving, unless GOMEMLIMIT says otherwise. Under 64 clients sending the
// 1,410 distinct corpus commands (tickets, snapshots, every code path)
// the heap target of serveGCPercent let RSS reach 62 MB; with this limit
// the collector runs earlier only when the heap nears it: 45 MB, and no
// measurable CPU per decision more. It is soft: a live heap above it is
// collected more often, never refused.
const serveMemoryLimit = 32 << 20

// tuneGC sets serveGCPercent and serveMemoryLimit for a serving daemon
// whose environment sets neither GOGC nor GOMEMLIMIT.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(serveGCPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

func (s *Server) httpServer(ctx context.Context, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.cfg.ReadTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		// Generous: an answer cut off by a write timeout is, for an http
		// hook, an answer that did not block.
		WriteTimeout:   s.cfg.ReadTimeout + 60*time.Second,
		IdleTimeout:    60 * time.Second,
		MaxHeaderBytes: 16 << 10,
		BaseContext:    func(net.Listener) context.Context { return ctx },
		ConnContext:    withConn,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

// fileID identifies a socket file, so shutdown removes only the file this
// daemon created and not one a newer daemon put in its place.
type fileID struct{ dev, ino uint64 }

func (s *Server) socketIdentity(ls Listeners) *fileID {
	if ls.Activated || s.cfg.SocketPath == "" {
		return nil
	}
	fi, err := os.Lstat(s.cfg.SocketPath)
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return &fileID{uint64(st.Dev), st.Ino}
}

func (s *Server) removeSocket(id *fileID) {
	if id == nil {
		return
	}
	fi, err := os.Lstat(s.cfg.SocketPath)
	if err != nil {
		return
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && uint64(st.Dev) == id.dev && st.Ino == id.ino {
		os.Remove(s.cfg.SocketPath)
	}
}
