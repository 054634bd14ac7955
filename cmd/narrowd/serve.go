package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/narrowd/narrowd/daemon"
	"github.com/narrowd/narrowd/daemon/mcp"
	"github.com/narrowd/narrowd/sandbox/changes"
)

const serveUsage = `serve [--config FILE] [--socket PATH] [--http 127.0.0.1:PORT] [--metrics 127.0.0.1:PORT]
       [--profile NAME|FILE] [--workspace DIR]... [--labels FILE]... [--watch FILE]... [--audit-dir DIR] [--state-dir DIR]
       [--audit-max-size BYTES] [--allow-at-pretool] [--interactive] [--log-level LEVEL]
       [--mcp=false] [--mcp-project DIR]... [--mcp-interval DURATION]
       [--snapshots=false] [--snapshot-keep DURATION] [--ticket-ttl DURATION]`

// runServe runs the daemon until SIGINT or SIGTERM; SIGHUP reloads the
// profile and label files. Flags override the
// config file ([fileConfig]). Under systemd it takes the socket from
// socket activation (LISTEN_PID/LISTEN_FDS) and reports READY=1 and
// STOPPING=1 on $NOTIFY_SOCKET.
func runServe(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "serve", serveUsage)
	configPath := fs.String("config", "", "config file (default $XDG_CONFIG_HOME/narrowd/config.toml)")
	socket := fs.String("socket", "", "Unix socket for the hook shim (default $XDG_RUNTIME_DIR/narrowd/narrowd.sock)")
	httpAddr := fs.String("http", "", "loopback address for Claude Code http hooks, such as 127.0.0.1:8787 (off when empty)")
	metricsAddr := fs.String("metrics", "", "loopback address for Prometheus /metrics, such as 127.0.0.1:9787 (off when empty)")
	profile := fs.String("profile", "", "built-in profile name or profile file (default standard)")
	var workspaces, labels, watch multiFlag
	fs.Var(&workspaces, "workspace", "extra workspace root (repeatable)")
	fs.Var(&labels, "labels", "label file in the catalog's format, for MCP tools (repeatable; reloaded on change)")
	fs.Var(&watch, "watch", "another file whose change reloads the engine (repeatable)")
	auditDir := fs.String("audit-dir", "", "audit log directory (default STATE_DIR/audit)")
	stateDir := fs.String("state-dir", "", "state directory for session history (default $XDG_STATE_HOME/narrowd)")
	auditMax := fs.Int64("audit-max-size", 0, "rotate the audit log after this many bytes (default 64 MiB)")
	auditSync := fs.Duration("audit-sync-within", daemon.DefaultAuditSyncWithin, "fsync each audit record at most this long after its call is answered (it is written before the answer either way); 0: fsync before answering")
	allowAtPreTool := fs.Bool("allow-at-pretool", false, "answer allow at pre-tool time even for agents with a permission-request hook (turns off abstain-then-permission)")
	interactive := fs.Bool("interactive", false, "a person answers the agents' prompts: send ask as ask where the agent supports it")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (default info)")
	mcpOn := fs.Bool("mcp", true, "discover the agents' MCP tools: read their MCP configuration and list each server's tools (stdio servers run under narrowd exec --confine: no network, no writes)")
	var mcpProjects multiFlag
	fs.Var(&mcpProjects, "mcp-project", "a project directory whose project-level MCP configuration is read, beside the workspaces and the projects ~/.claude.json records (repeatable)")
	mcpInterval := fs.Duration("mcp-interval", 10*time.Minute, "how often MCP servers are listed again (configuration changes are seen at once)")
	snapshots := fs.Bool("snapshots", true, "copy the workspace files a call changes into the snapshot store first (narrowd undo); off: such writes are judged as check judges them")
	snapshotKeep := fs.Duration("snapshot-keep", daemon.DefaultSnapshotKeep, "prune snapshots older than this, hourly (negative: never)")
	ticketTTL := fs.Duration("ticket-ttl", 0, "how long a sandbox ticket stays redeemable after the hook answer (default 60s)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitError{1}
	}
	c, err := loadConfig(e, *configPath)
	if err != nil {
		return err
	}
	set := setFlags(fs)
	over := func(name string, dst *string, v string) {
		if set[name] {
			*dst = v
		}
	}
	over("socket", &c.Socket, *socket)
	over("http", &c.HTTP, *httpAddr)
	over("metrics", &c.Metrics, *metricsAddr)
	over("profile", &c.Profile, *profile)
	over("audit-dir", &c.AuditDir, *auditDir)
	over("state-dir", &c.StateDir, *stateDir)
	over("log-level", &c.LogLevel, *logLevel)
	if set["workspace"] {
		c.Workspaces = workspaces
	}
	if set["labels"] {
		c.Labels = labels
	}
	if set["watch"] {
		c.Watch = watch
	}
	if set["audit-max-size"] {
		c.AuditMaxSize = *auditMax
	}
	syncWithin := *auditSync
	if !set["audit-sync-within"] && c.AuditSyncWithin != nil {
		syncWithin = c.AuditSyncWithin.Duration
	}
	if syncWithin <= 0 {
		syncWithin = daemon.AuditSyncBeforeAnswer
	}
	allowPre := c.AbstainForPermissionRequest != nil && !*c.AbstainForPermissionRequest
	if set["allow-at-pretool"] {
		allowPre = *allowAtPreTool
	}
	if set["interactive"] {
		c.Interactive = *interactive
	}
	mcpEnabled := c.MCP == nil || *c.MCP
	if set["mcp"] {
		mcpEnabled = *mcpOn
	}
	if set["mcp-project"] {
		c.MCPProjects = mcpProjects
	}
	if set["mcp-interval"] || c.MCPInterval.Duration == 0 {
		c.MCPInterval.Duration = *mcpInterval
	}
	snapshotsOn := c.Snapshots == nil || *c.Snapshots
	if set["snapshots"] {
		snapshotsOn = *snapshots
	}
	if set["ticket-ttl"] {
		c.TicketTTL.Duration = *ticketTTL
	}
	if set["snapshot-keep"] || c.SnapshotKeep.Duration == 0 {
		c.SnapshotKeep.Duration = *snapshotKeep
	}
	c.defaults(e)
	if c.StateDir == "" || c.AuditDir == "" {
		return errors.New("no state directory: set HOME, XDG_STATE_HOME or --state-dir")
	}
	log, err := newLogger(e, c.LogLevel)
	if err != nil {
		return err
	}

	cfg := daemon.Config{
		Engine:           c.engine(),
		Watch:            c.Watch,
		SocketPath:       c.Socket,
		AuditDir:         c.AuditDir,
		AuditMaxSize:     c.AuditMaxSize,
		AuditKeep:        c.AuditKeep,
		AuditSyncWithin:  syncWithin,
		StateDir:         c.StateDir,
		AllowAtPreTool:   allowPre,
		Interactive:      c.Interactive,
		NoSnapshots:      !snapshotsOn,
		SnapshotKeep:     c.SnapshotKeep.Duration,
		TicketTTL:        c.TicketTTL.Duration,
		SandboxUndo:      c.SandboxUndo == nil || *c.SandboxUndo,
		SandboxHomeAllow: c.SandboxHomeAllow,
		UndoBudget:       changes.Budget{MaxEntries: c.UndoMaxEntries, MaxBeforeBytes: c.UndoMaxBytes},
		NotifySocket:     e.getenv("NOTIFY_SOCKET"),
		Version:          version(),
		Logger:           log,
	}
	if mcpEnabled {
		cfg.MCP = mcpDiscovery(e, append(slices.Clone(c.Workspaces), c.MCPProjects...), c.MCPInterval.Duration, log)
	}

	// Build the engine, audit log and session history first: a bad
	// profile must not leave a socket behind that nobody serves.
	srv, err := daemon.New(cfg)
	if err != nil {
		return err
	}
	// SIGHUP rebuilds the engine, like a change to a watched file.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			srv.Reload()
		}
	}()
	serveErr := serveOn(ctx, e, c, srv)
	return errors.Join(serveErr, srv.Close())
}

// mcpDiscovery configures discovery of the agents' MCP tools from the
// environment: HOME, CODEX_HOME and COPILOT_HOME say where the user-level
// files are.
func mcpDiscovery(e env, projects []string, interval time.Duration, log *slog.Logger) *mcp.Discovery {
	var launcher mcp.Launcher = mcp.NamespaceLauncher{}
	if exe, err := selfPath(); err == nil {
		launcher = mcp.ExecLauncher{Narrowd: exe}
	}
	return &mcp.Discovery{
		Locations: mcp.Locations{
			Home: e.getenv("HOME"), CodexHome: e.getenv("CODEX_HOME"), CopilotHome: e.getenv("COPILOT_HOME"),
			Projects: projects, Getenv: e.getenv,
		},
		Lister:   &mcp.Lister{Launcher: launcher, Version: version()},
		Registry: mcp.NewRegistry(),
		Interval: interval,
		Logger:   log,
	}
}

// selfPath is this program as it was started: argv[0], found on PATH
// when it has no slash. It is not os.Executable, which resolves links: a
// multi-call binary (the test binary behind testscript's narrowd) would
// lose the name it dispatches on.
func selfPath() (string, error) {
	p := os.Args[0]
	if !strings.ContainsRune(p, '/') {
		var err error
		if p, err = exec.LookPath(p); err != nil {
			return os.Executable()
		}
	}
	return filepath.Abs(p)
}

// serveOn opens the listeners (or takes systemd's socket) and serves.
func serveOn(ctx context.Context, e env, c fileConfig, srv *daemon.Server) error {
	var err error

	var ls daemon.Listeners
	closeAll := func() {
		for _, l := range []net.Listener{ls.Unix, ls.HTTP, ls.Metrics} {
			if l != nil {
				l.Close()
			}
		}
	}
	ls.Unix, err = daemon.ActivationListener(e.getenv("LISTEN_PID"), e.getenv("LISTEN_FDS"))
	if err != nil {
		return err
	}
	ls.Activated = ls.Unix != nil
	if ls.Unix == nil {
		if ls.Unix, err = daemon.Listen(c.Socket); err != nil {
			return err
		}
	}
	if c.HTTP != "" {
		if ls.HTTP, err = daemon.ListenLoopback(ctx, c.HTTP); err != nil {
			closeAll()
			return fmt.Errorf("--http: %w", err)
		}
	}
	if c.Metrics != "" {
		if ls.Metrics, err = daemon.ListenLoopback(ctx, c.Metrics); err != nil {
			closeAll()
			return fmt.Errorf("--metrics: %w", err)
		}
	}
	return srv.Serve(ctx, ls)
}
