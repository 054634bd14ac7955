package daemon

import (
	"io"
	"log/slog"
	"time"

	"github.com/narrowd/narrowd/daemon/mcp"
	"github.com/narrowd/narrowd/sandbox/changes"
)

// Config is everything the daemon needs, built by cmd/narrowd from flags
// and the config file. The zero value of every optional field is a safe
// default; StateDir and AuditDir are required by [New].
type Config struct {
	// Engine configures the decision pipeline (profile, workspaces).
	Engine EngineConfig
	// MCP, when set, discovers the agents' MCP tools while the daemon
	// serves; its registry tells the engine each tool's current def_hash.
	MCP *mcp.Discovery
	// Watch lists extra files (catalogs, sensitive-name lists) whose change
	// rebuilds the engine, beside the profile when it is a file.
	Watch []string
	// SandboxHomeAllow extends the home allowlist of narrowd's sandbox
	// (sandbox/home.toml): paths relative to $HOME, read-only, or
	// writable with their writes discarded when suffixed ":cache".
	SandboxHomeAllow []string

	// SocketPath is the Unix socket the shim talks to. Run removes it on
	// shutdown unless the listener came from socket activation.
	SocketPath string

	// AuditDir holds audit.jsonl and its rotated predecessors.
	AuditDir string
	// AuditMaxSize is the size in bytes after which the audit log is
	// rotated; 0 means [DefaultAuditMaxSize].
	AuditMaxSize int64
	// AuditKeep is how many rotated audit files are kept; 0 means
	// [DefaultAuditKeep].
	AuditKeep int
	// AuditTimeout bounds how long a call waits for its audit record to
	// be written before it fails safe, and how long a written record may
	// go without its fsync before calls fail safe; 0 means 2 s, below
	// the shim's default timeout so the shim gets the blocking reply.
	AuditTimeout time.Duration
	// AuditSyncWithin bounds how long after its call is answered an
	// audit record may wait for its fsync; 0 means
	// [DefaultAuditSyncWithin]. A record is written before the answer
	// either way, so a killed daemon loses none; this is what a crash of
	// the machine could lose. [AuditSyncBeforeAnswer] fsyncs every
	// record before its call is answered (shared by concurrent calls),
	// which costs about a third of the daemon's throughput here.
	AuditSyncWithin time.Duration

	// StateDir holds durable state: session history, and the snapshot
	// store (StateDir/snapshots) unless Engine names another.
	StateDir string
	// NoSnapshots turns the snapshot store off: no call narrows on a
	// snapshot, as in check and the shim's fallback.
	NoSnapshots bool
	// SnapshotKeep is how long the daemon keeps snapshots before it
	// prunes them (hourly, and at start); 0 means 7 days, and a negative
	// value keeps them until `narrowd snapshots prune`. Without pruning a
	// full store stops taking snapshots, and the writes they allowed ask.
	SnapshotKeep time.Duration
	// TicketTTL is how long a sandbox ticket stays redeemable after the
	// hook answer that issued it; 0 means 60 s. An agent runs a rewritten
	// call at once, so a short life leaves little to replay.
	TicketTTL time.Duration
	// SandboxUndo puts every sandboxed run behind an overlay of its
	// writable roots and applies its changes after it exits, with the
	// originals kept for `narrowd undo` (ticket_undo.go); needs the
	// snapshot store. UndoBudget bounds what one run may change and still
	// be applied without a person (zero fields: changes' defaults).
	SandboxUndo bool
	UndoBudget  changes.Budget

	// AllowAtPreTool turns off abstain-then-permission: when false (the
	// default), narrowd abstains at pre-tool time for calls it would allow
	// from agents that have a permission-request hook, and answers allow
	// only when the agent is about to ask a person (a real prompt
	// avoided). When true, it answers allow at pre-tool time for every
	// agent and counts only estimates.
	AllowAtPreTool bool

	// Interactive tells the agent encoders a person is present to answer
	// an ask. When false an ask becomes a deny that says how to approve.
	Interactive bool

	// NotifySocket is $NOTIFY_SOCKET; empty means not under systemd.
	NotifySocket string

	// Version is the build's version string for narrowd_build_info and
	// status.
	Version string

	// Logger receives the daemon's log; nil discards it.
	Logger *slog.Logger

	// ReadTimeout bounds how long a client may take to send one request;
	// 0 means 5 s.
	ReadTimeout time.Duration
	// ShutdownTimeout bounds how long shutdown waits for in-flight calls;
	// 0 means 10 s.
	ShutdownTimeout time.Duration

	// now returns the time; nil means time.Now. Tests set it.
	now func() time.Time
}

// Defaults for [Config].
const (
	DefaultAuditMaxSize    = 64 << 20
	DefaultAuditKeep       = 8
	defaultReadTimeout     = 5 * time.Second
	defaultAuditTimeout    = 2 * time.Second
	defaultShutdownTimeout = 10 * time.Second
	DefaultSnapshotKeep    = 7 * 24 * time.Hour
	DefaultAuditSyncWithin = 10 * time.Millisecond
	// AuditSyncBeforeAnswer, as Config.AuditSyncWithin, fsyncs each
	// audit record before its call is answered.
	AuditSyncBeforeAnswer time.Duration = -1
)

func (c *Config) fill() {
	if c.AuditMaxSize <= 0 {
		c.AuditMaxSize = DefaultAuditMaxSize
	}
	if c.AuditKeep <= 0 {
		c.AuditKeep = DefaultAuditKeep
	}
	if c.AuditTimeout <= 0 {
		c.AuditTimeout = defaultAuditTimeout
	}
	if c.AuditSyncWithin == 0 {
		c.AuditSyncWithin = DefaultAuditSyncWithin
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = defaultReadTimeout
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = defaultShutdownTimeout
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.Version == "" {
		c.Version = "devel"
	}
	if c.TicketTTL <= 0 {
		c.TicketTTL = defaultTicketTTL
	}
	if c.SnapshotKeep == 0 {
		c.SnapshotKeep = DefaultSnapshotKeep
	}
	if !c.NoSnapshots && c.Engine.Snapshots == nil && c.Engine.SnapshotDir == "" && c.StateDir != "" {
		c.Engine.SnapshotDir = SnapshotDir(c.StateDir)
	}
}
