// Command narrowd judges coding-agent tool calls: it parses shell commands
// and paths, proves what a call cannot do, and lets a profile decide allow,
// ask or deny. See the README for the subcommands.
//
// Exit codes: 0 success; 1 usage or internal error; 2 a hook answer that
// blocks the call (the code every supported agent honours as a block).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// env is what a subcommand may touch of the process: its streams,
// arguments and environment. Tests substitute it.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// exitError carries a specific exit code out of a subcommand.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

type subcommand struct {
	run   func(ctx context.Context, e env, args []string) error
	usage string
}

func subcommands() map[string]subcommand {
	return map[string]subcommand{
		"check":     {runCheck, "judge hook payloads offline and print JSON verdicts"},
		"explain":   {runExplain, "judge one hook payload and explain the verdict for a person"},
		"profile":   {runProfile, "profile check FILE: report every problem in a profile"},
		"serve":     {runServe, "run the daemon"},
		"hook":      {runHook, "the hook shim an agent runs: hook AGENT"},
		"install":   {runInstall, "install the hook into an agent's settings, or the systemd unit"},
		"uninstall": {runUninstall, "reverse install"},
		"log":       {runLog, "filter and print audit records"},
		"stats":     {runStats, "print decision and prompts-avoided totals"},
		"status":    {runStatus, "show the daemon's state"},
		"label":     {runLabel, "label an MCP tool: show its exact definition, ask the six questions, record the answers"},
		"exec":      {runExec, "run a command in narrowd's sandbox (--ticket T, or --confine -- PROG)"},
		"undo":      {runUndo, "put back the files narrowd preserved before a call: undo CALL-ID"},
		"snapshots": {runSnapshots, "list narrowd's snapshots, or prune them"},
		"show":      {runShow, "list what narrowd holds for a call, and what a sandboxed run created, changed and deleted: show CALL-ID"},
		"apply":     {runApply, "apply a sandboxed run's changes narrowd did not apply (over budget): apply CALL-ID"},
		"discard":   {runDiscard, "drop a sandboxed run's changes narrowd did not apply: discard CALL-ID"},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, env{os.Stdin, os.Stdout, os.Stderr, os.Getenv}, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, e env, args []string) int {
	cmds := subcommands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stderr, cmds)
		if len(args) == 0 {
			return 1
		}
		return 0
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "narrowd: error: unknown command %q\n", args[0])
		usage(e.stderr, cmds)
		return 1
	}
	err := cmd.run(ctx, e, args[1:])
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintf(e.stderr, "narrowd: error: %v\n", err)
		return 1
	}
}

func usage(w io.Writer, cmds map[string]subcommand) {
	fmt.Fprintln(w, "usage: narrowd <command> [flags]")
	fmt.Fprintln(w)
	for _, name := range []string{"check", "explain", "profile", "serve", "hook", "install", "uninstall", "log", "stats", "status", "label", "exec", "undo", "show", "apply", "discard", "snapshots"} {
		fmt.Fprintf(w, "  %-10s %s\n", name, cmds[name].usage)
	}
}
