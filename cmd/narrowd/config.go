package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/narrowd/narrowd/cmd/internal/quickhook"
	"github.com/narrowd/narrowd/daemon"
)

// fileConfig is narrowd's config file (TOML), shared by serve, hook, log,
// stats and status. Every key is optional; flags override it. Unknown keys
// are an error.
//
//	socket = "/run/user/1000/narrowd/narrowd.sock"
//	http = "127.0.0.1:8787"        # Claude Code http hooks; off when empty
//	metrics = "127.0.0.1:9787"     # Prometheus /metrics; off when empty
//	profile = "standard"           # built-in name or a TOML file
//	workspaces = ["/home/me/src"]  # extra workspace roots
//	labels = ["~/.config/narrowd/labels.toml"]  # label files (catalog format) for MCP tools
//	watch = ["/home/me/sensitive.txt"]  # more files whose change reloads
//	audit_dir = "~/.local/state/narrowd/audit"
//	state_dir = "~/.local/state/narrowd"
//	audit_max_size = 67108864      # bytes before rotation
//	audit_keep = 8                 # rotated files kept
//	audit_sync_within = "10ms"     # fsync audit records this soon after answering; "0s": before
//	abstain_for_permission_request = true
//	interactive = false
//	log_level = "info"
//	snapshots = true               # the daemon's snapshot store (narrowd undo)
//	snapshot_keep = "168h"         # prune snapshots older than this; "-1s" never
//	ticket_ttl = "60s"             # how long a sandbox ticket stays redeemable
//	sandbox_undo = true            # sandboxed runs behind an overlay, applied after with undo (narrowd show/undo/apply/discard)
//	undo_max_entries = 50000       # a run changing more files and directories is not applied; the person is told
//	undo_max_bytes = 536870912     # nor one replacing or deleting more bytes of workspace files
//	sandbox_home_allow = [".local/share/mise", ".bun/install:cache"]  # more of $HOME (relative) shown in the sandbox; ":cache" a throwaway writable layer
//	mcp = true                     # discover the agents' MCP tools
//	mcp_projects = ["/home/me/src/app"]  # more project dirs whose MCP config is read
//	mcp_interval = "10m"           # how often MCP servers are listed again
type fileConfig struct {
	Socket                      string    `toml:"socket"`
	HTTP                        string    `toml:"http"`
	Metrics                     string    `toml:"metrics"`
	Profile                     string    `toml:"profile"`
	Workspaces                  []string  `toml:"workspaces"`
	Labels                      []string  `toml:"labels"`
	Watch                       []string  `toml:"watch"`
	AuditDir                    string    `toml:"audit_dir"`
	StateDir                    string    `toml:"state_dir"`
	AuditMaxSize                int64     `toml:"audit_max_size"`
	AuditKeep                   int       `toml:"audit_keep"`
	AuditSyncWithin             *duration `toml:"audit_sync_within"`
	AbstainForPermissionRequest *bool     `toml:"abstain_for_permission_request"`
	Interactive                 bool      `toml:"interactive"`
	LogLevel                    string    `toml:"log_level"`
	Snapshots                   *bool     `toml:"snapshots"`
	SnapshotKeep                duration  `toml:"snapshot_keep"`
	TicketTTL                   duration  `toml:"ticket_ttl"`
	SandboxUndo                 *bool     `toml:"sandbox_undo"`
	SandboxHomeAllow            []string  `toml:"sandbox_home_allow"`
	UndoMaxEntries              int       `toml:"undo_max_entries"`
	UndoMaxBytes                int64     `toml:"undo_max_bytes"`
	MCP                         *bool     `toml:"mcp"`
	MCPProjects                 []string  `toml:"mcp_projects"`
	MCPInterval                 duration  `toml:"mcp_interval"`
}

// duration is a time.Duration written as text in the config file
// ("10m", "168h").
type duration struct{ time.Duration }

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("bad duration %q: %w", b, err)
	}
	d.Duration = v
	return nil
}

// defaultConfigPath is $XDG_CONFIG_HOME/narrowd/config.toml, or under
// ~/.config.
func defaultConfigPath(e env) string { return quickhook.DefaultConfigPath(e.getenv) }

// loadConfig reads the config file at path, or the default one when path
// is empty (a missing default file is an empty config). Call
// [fileConfig.defaults] after applying flags.
func loadConfig(e env, path string) (fileConfig, error) {
	var c fileConfig
	explicit := path != ""
	if !explicit {
		path = defaultConfigPath(e)
	}
	if path != "" {
		md, err := toml.DecodeFile(path, &c)
		switch {
		case err == nil:
			if und := md.Undecoded(); len(und) > 0 {
				keys := make([]string, len(und))
				for i, k := range und {
					keys[i] = k.String()
				}
				return c, fmt.Errorf("%s: unknown keys %s", path, strings.Join(keys, ", "))
			}
		case errors.Is(err, fs.ErrNotExist) && !explicit:
		default:
			return c, fmt.Errorf("failed to read config: %w", err)
		}
	}
	home := e.getenv("HOME")
	for _, p := range []*string{&c.Socket, &c.Profile, &c.AuditDir, &c.StateDir} {
		*p = expandHome(*p, home)
	}
	for _, list := range [][]string{c.Workspaces, c.Labels, c.Watch, c.MCPProjects} {
		for i := range list {
			list[i] = expandHome(list[i], home)
		}
	}
	return c, nil
}

// engine is the engine configuration the file describes.
func (c *fileConfig) engine() daemon.EngineConfig {
	return daemon.EngineConfig{Profile: c.Profile, Workspaces: c.Workspaces, LabelFiles: c.Labels}
}

// defaults fills in the socket, state and audit directories left empty.
func (c *fileConfig) defaults(e env) {
	if c.Socket == "" {
		c.Socket = defaultSocket(e)
	}
	if c.StateDir == "" {
		c.StateDir = defaultStateDir(e)
	}
	if c.AuditDir == "" && c.StateDir != "" {
		c.AuditDir = filepath.Join(c.StateDir, "audit")
	}
}

func expandHome(p, home string) string {
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return filepath.Join(home, p[1:])
	}
	return p
}

// defaultSocket is $XDG_RUNTIME_DIR/narrowd/narrowd.sock, or
// /tmp/narrowd-UID/narrowd.sock (see [quickhook.DefaultSocket]).
func defaultSocket(e env) string { return quickhook.DefaultSocket(e.getenv) }

// defaultStateDir is $XDG_STATE_HOME/narrowd, or ~/.local/state/narrowd.
func defaultStateDir(e env) string {
	if d := e.getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "narrowd")
	}
	if h := e.getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "narrowd")
	}
	return ""
}

// newFlags returns a flag set that reports to e.stderr and does not exit.
func newFlags(e env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: narrowd %s\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; -h is success, other errors exit 1 (usage).
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return exitError{0}
	}
	if err != nil {
		return exitError{1}
	}
	return nil
}

// setFlags returns the names of the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	m := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { m[f.Name] = true })
	return m
}

// newLogger logs text to e.stderr at the named level.
func newLogger(e env, level string) (*slog.Logger, error) {
	var l slog.Level
	if level == "" {
		level = "info"
	}
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("bad log level %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: l})), nil
}

// version is the module version the binary was built from.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
