package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/narrowd/narrowd/daemon/install"
)

const installUsage = `usage: narrowd install <agent> [--user | --project DIR] [--http ADDR] [--binary PATH] [--dry-run]
       narrowd install systemd [--socket] [--dir DIR] [--binary PATH] [--dry-run]
       narrowd uninstall <agent> [--user | --project DIR] [--binary PATH] [--dry-run]
       narrowd uninstall systemd [--dir DIR] [--dry-run]

agents: claude, codex, gemini, copilot, cursor
`

// installFlags are the flags of install and uninstall.
type installFlags struct {
	project, http, binary, dir string
	user, socket, dryRun       bool
}

func runInstall(ctx context.Context, e env, args []string) error {
	return installCommand(e, args, false)
}

func runUninstall(ctx context.Context, e env, args []string) error {
	return installCommand(e, args, true)
}

func installCommand(e env, args []string, undo bool) error {
	name := "install"
	if undo {
		name = "uninstall"
	}
	var f installFlags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprint(e.stderr, installUsage+"\nflags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&f.project, "project", "", "edit the project's settings under `DIR`")
	fs.BoolVar(&f.user, "user", false, "edit the user's settings (the default)")
	fs.StringVar(&f.http, "http", "", "claude only: an http hook to the daemon at loopback `ADDR` (host:port)")
	fs.StringVar(&f.binary, "binary", "", "the narrowd `PATH` the hooks and the unit run (default: this executable)")
	fs.StringVar(&f.dir, "dir", "", "systemd user unit `DIR` (default: $XDG_CONFIG_HOME/systemd/user)")
	fs.BoolVar(&f.socket, "socket", false, "systemd: also install narrowd.socket for socket activation")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print what would change and write nothing")
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("%s wants one target: an agent or systemd", name)
	}
	if pos[0] == "systemd" {
		return installSystemd(e, f, undo)
	}
	return installAgent(e, install.Agent(pos[0]), f, undo)
}

// parseInterleaved parses flags before, between and after positional
// arguments and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// userDirEnv names the variable that moves an agent's user config dir.
func userDirEnv(a install.Agent) string {
	switch a {
	case install.Claude:
		return "CLAUDE_CONFIG_DIR"
	case install.Codex:
		return "CODEX_HOME"
	case install.Copilot:
		return "COPILOT_HOME"
	}
	return ""
}

func installAgent(e env, a install.Agent, f installFlags, undo bool) error {
	if f.socket || f.dir != "" {
		return fmt.Errorf("--socket and --dir are for systemd, not %s", a)
	}
	if f.user && f.project != "" {
		return errors.New("--user and --project exclude each other")
	}
	if undo && f.http != "" {
		return errors.New("uninstall takes no --http: it removes narrowd's hooks of either form")
	}
	cfg := install.Config{
		Agent:      a,
		ProjectDir: f.project,
		Home:       e.getenv("HOME"),
		HTTPAddr:   f.http,
		DryRun:     f.dryRun,
	}
	if v := userDirEnv(a); v != "" && f.project == "" {
		cfg.UserDir = e.getenv(v)
	}
	var err error
	if !undo || f.binary != "" {
		if cfg.Binary, err = binaryPath(e, f.binary); err != nil {
			return err
		}
		cfg.Binary = hookBinary(cfg.Binary)
	}
	if undo {
		res, err := install.Uninstall(cfg)
		if err != nil {
			return err
		}
		report(e.stdout, res, f.dryRun, fmt.Sprintf("removed narrowd's %s hooks from", a), fmt.Sprintf("no narrowd %s hooks in", a))
		return nil
	}
	res, err := install.Install(cfg)
	if err != nil {
		return err
	}
	report(e.stdout, res, f.dryRun, fmt.Sprintf("installed narrowd's %s hooks in", a), fmt.Sprintf("narrowd's %s hooks are already installed in", a))
	if !f.dryRun {
		warnMissing(e, cfg.Binary)
		for _, h := range agentHints(a, f) {
			fmt.Fprintf(e.stderr, "narrowd: hint: %s\n", h)
		}
	}
	return nil
}

func agentHints(a install.Agent, f installFlags) []string {
	var hints []string
	switch {
	case a == install.Claude && f.http != "":
		hints = append(hints, "Claude Code now blocks every tool call while nothing answers on "+f.http+": keep `narrowd serve --http "+f.http+"` running (or set http in its config file)",
			"any local user who binds "+f.http+" before narrowd does (after a crash, at boot) receives these hook calls and can answer them: on a machine shared with other users keep the default command hook (narrowd install claude, without --http), which asks narrowd over a socket only you can reach")
	case a == install.Codex:
		hints = append(hints, "Codex runs new or changed hooks only after you trust them: review them with /hooks in codex")
	case a == install.Gemini && f.project != "":
		hints = append(hints, "Gemini CLI runs project hooks only in trusted folders")
	case a == install.Copilot && f.project != "":
		hints = append(hints, "Copilot CLI runs repository hooks only in trusted folders")
	case a == install.Cursor && f.project != "":
		hints = append(hints, "Cursor runs project hooks only in trusted workspaces")
	}
	if f.project != "" {
		hints = append(hints, "the hook command holds this machine's path to narrowd; commit the file only if every machine has narrowd there")
	}
	return hints
}

func installSystemd(e env, f installFlags, undo bool) error {
	if f.project != "" || f.user || f.http != "" {
		return errors.New("--project, --user and --http are for agents, not systemd")
	}
	cfg := install.UnitConfig{Dir: f.dir, Socket: f.socket, DryRun: f.dryRun}
	if cfg.Dir == "" {
		cfg.Dir = e.getenv("XDG_CONFIG_HOME")
		if cfg.Dir == "" {
			home := e.getenv("HOME")
			if home == "" {
				return errors.New("neither --dir nor $XDG_CONFIG_HOME nor $HOME is set")
			}
			cfg.Dir = filepath.Join(home, ".config")
		}
		cfg.Dir = filepath.Join(cfg.Dir, "systemd", "user")
	}
	if undo {
		if f.socket || f.binary != "" {
			return errors.New("uninstall systemd takes no --socket or --binary: it removes every unit install wrote")
		}
		results, err := install.UninstallSystemd(cfg)
		for _, res := range results {
			report(e.stdout, res, f.dryRun, "removed", "no narrowd unit at")
		}
		if err != nil {
			return err
		}
		if !f.dryRun {
			fmt.Fprintln(e.stderr, "narrowd: hint: stop the units and reload: systemctl --user stop narrowd.socket narrowd.service; systemctl --user daemon-reload")
		}
		return nil
	}
	var err error
	if cfg.Binary, err = binaryPath(e, f.binary); err != nil {
		return err
	}
	results, err := install.InstallSystemd(cfg)
	for _, res := range results {
		if res.Removed {
			report(e.stdout, res, f.dryRun, "removed", "")
			continue
		}
		report(e.stdout, res, f.dryRun, "wrote", "unchanged:")
	}
	if err != nil {
		return err
	}
	if !f.dryRun {
		warnMissing(e, cfg.Binary)
		unit := install.ServiceUnit
		if f.socket {
			unit = install.SocketUnit
		}
		fmt.Fprintf(e.stderr, "narrowd: hint: systemctl --user daemon-reload && systemctl --user enable --now %s\n", unit)
	}
	return nil
}

// report prints one line per result, or with dryRun the content that
// would be written.
func report(w io.Writer, res install.Result, dryRun bool, did, same string) {
	switch {
	case !res.Changed:
		fmt.Fprintf(w, "%s %s\n", same, res.Path)
	case dryRun && res.Removed:
		fmt.Fprintf(w, "would remove %s\n", res.Path)
	case dryRun:
		fmt.Fprintf(w, "would write %s:\n%s", res.Path, res.After)
	default:
		fmt.Fprintf(w, "%s %s\n", did, res.Path)
		if res.Backup != "" {
			fmt.Fprintf(w, "backup: %s\n", res.Backup)
		}
	}
}

// binaryPath returns the absolute path the hook and the unit run: --binary
// if given, else this executable, preferring a narrowd on $PATH that is
// the same file (a stable symlink survives upgrades better than its
// target).
func binaryPath(e env, flagValue string) (string, error) {
	if flagValue != "" {
		p, err := filepath.Abs(flagValue)
		if err != nil {
			return "", fmt.Errorf("--binary: %w", err)
		}
		return p, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find this executable; pass --binary: %w", err)
	}
	self, err := os.Stat(exe)
	if err != nil {
		return exe, nil
	}
	for _, dir := range filepath.SplitList(e.getenv("PATH")) {
		cand := filepath.Join(dir, "narrowd")
		if !filepath.IsAbs(cand) || strings.ContainsAny(cand, "\n\r") {
			continue
		}
		if fi, err := os.Stat(cand); err == nil && os.SameFile(fi, self) {
			return cand, nil
		}
	}
	return exe, nil
}

// hookBinary is what an agent's hook runs: narrowd-hook when it is an
// executable file beside narrowd, else narrowd itself. narrowd-hook
// answers the same, in about a third of narrowd's start-up time.
func hookBinary(narrowd string) string {
	if filepath.Base(narrowd) != "narrowd" {
		return narrowd
	}
	small := filepath.Join(filepath.Dir(narrowd), install.HookBinaryName)
	if isExecutable(small) {
		return small
	}
	return narrowd
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func warnMissing(e env, binary string) {
	if filepath.Base(binary) == install.HookBinaryName {
		// It hands to the narrowd beside it all the daemon does not answer.
		if big := filepath.Join(filepath.Dir(binary), "narrowd"); !isExecutable(big) {
			fmt.Fprintf(e.stderr, "narrowd: warning: %s has no executable narrowd beside it; every call the daemon cannot answer is blocked\n", binary)
		}
	}
	if !isExecutable(binary) {
		fmt.Fprintf(e.stderr, "narrowd: warning: %s is not an executable file; every hook call fails until it is\n", binary)
	}
	if strings.Contains(binary, string(filepath.Separator)+"go-build") {
		fmt.Fprintf(e.stderr, "narrowd: warning: %s is a temporary `go run` build; install narrowd and pass --binary\n", binary)
	}
}
