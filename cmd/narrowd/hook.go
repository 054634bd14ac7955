package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/narrowd/narrowd/cmd/internal/quickhook"
	"github.com/narrowd/narrowd/daemon"
	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/rules"
)

const hookUsage = `hook [--socket PATH] [--timeout DURATION] [--config FILE] [--interactive[=false]] [--event EVENT] [--offline] [--agent] AGENT|auto

The shim an agent runs before each tool call. It reads the hook payload on
stdin, asks the daemon, and answers exactly as the agent expects (stdout,
stderr, exit code). If the daemon is unreachable it judges the call itself
with the same engine. It never lets a call run because something failed.
--event names the hook event the command is configured for, for payloads
that do not name it (Copilot's camelCase permissionRequest).`

// runHook is the hook shim. While the daemon answers, quickhook's early
// answer has already replied and exited before main ran; runHook sees the
// rest: arguments the early answer leaves alone, --offline, and the calls
// it handed over (the payload back on stdin, and in [quickhook.Handoff]
// what the daemon did). It builds no engine while the daemon answers.
func runHook(ctx context.Context, e env, args []string) (err error) {
	a, perr := parseHookArgs(newFlags(e, "hook", hookUsage), args)
	if perr != nil {
		if errors.Is(perr, flag.ErrHelp) {
			return exitError{0}
		}
		// A hook that cannot even parse its arguments must still block.
		if errors.Is(perr, quickhook.ErrAgentNames) {
			return writeReply(e, agent.Fail("", rules.Call{}, perr.Error()))
		}
		return writeReply(e, agent.Fail("", rules.Call{}, "narrowd hook was run with bad arguments"))
	}
	name := a.Agent
	defer func() {
		if p := recover(); p != nil {
			err = writeReply(e, agent.Fail(name, rules.Call{}, "narrowd hit an internal error"))
		}
	}()

	payload, rerr := io.ReadAll(io.LimitReader(e.stdin, agent.MaxPayload+1))
	switch {
	case rerr != nil:
		return writeReply(e, agent.Fail(name, rules.Call{}, "narrowd could not read the hook payload"))
	case len(payload) > agent.MaxPayload:
		return writeReply(e, agent.Fail(name, rules.Call{}, "the hook payload is larger than narrowd accepts"))
	}

	// The socket: flag, else the config file's, else the default. The
	// file is read only when it may name the socket.
	sock := a.Socket
	var c fileConfig
	var cerr error
	loaded := false
	load := func() {
		if !loaded {
			c, cerr = loadConfig(e, a.Config)
			loaded = true
		}
	}
	if sock == "" {
		load()
		if cerr == nil {
			c.defaults(e)
			sock = c.Socket
		} else {
			sock = defaultSocket(e)
		}
	}

	asked := e.getenv(quickhook.Handoff)
	switch {
	case strings.HasPrefix(asked, "unusable"):
		return writeReply(e, agent.Fail(name, rules.Call{}, "narrowd's daemon gave an unusable answer"))
	case asked != "" || a.Offline:
		// The early answer found the daemon unreachable: judge here.
	default:
		client := daemon.Client{Socket: sock, Timeout: a.Timeout}
		env, herr := client.HookEvent(ctx, name, a.Event, payload, a.Interactive)
		if herr == nil {
			return writeReply(e, env.Reply)
		}
		if !errors.Is(herr, daemon.ErrUnreachable) {
			// The daemon answered, but not with a reply narrowd can trust.
			return writeReply(e, agent.Fail(name, rules.Call{}, "narrowd's daemon gave an unusable answer"))
		}
	}

	// In-process: the same engine and protocol, session unknown.
	load()
	if cerr != nil {
		fmt.Fprintf(e.stderr, "narrowd: daemon unreachable, and the config file failed: %v\n", cerr)
		return writeReply(e, agent.Fail(name, rules.Call{}, "narrowd's config file could not be read"))
	}
	c.defaults(e)
	opt := agent.Options{Interactive: c.Interactive}
	if a.Interactive != nil {
		opt.Interactive = *a.Interactive
	}
	reply := daemon.OfflineEvent(daemon.OfflineConfig{
		Engine:         c.engine(),
		AllowAtPreTool: c.AbstainForPermissionRequest != nil && !*c.AbstainForPermissionRequest,
		StateDir:       c.StateDir,
		AuditDir:       c.AuditDir,
	}, name, a.Event, payload, opt)
	if len(reply.Stdout) > 0 || reply.ExitCode != 0 {
		reply.Stderr = "narrowd: daemon unreachable, evaluated in-process\n" + reply.Stderr
	}
	return writeReply(e, reply)
}

// parseHookArgs parses the hook's arguments with fs: flags and the one
// agent name in any order. [quickhook.ParseArgs] must agree with it on
// every argument list it accepts (TestQuickParseAgrees).
func parseHookArgs(fs *flag.FlagSet, argv []string) (quickhook.Args, error) {
	var a quickhook.Args
	fs.StringVar(&a.Agent, "agent", "", "the agent that runs the hook, or auto to tell from the payload")
	fs.StringVar(&a.Socket, "socket", "", "the daemon's socket (default $XDG_RUNTIME_DIR/narrowd/narrowd.sock)")
	fs.DurationVar(&a.Timeout, "timeout", quickhook.DefaultTimeout, "how long to wait for the daemon before judging in-process")
	fs.BoolVar(&a.Offline, "offline", false, "judge in-process without asking the daemon")
	fs.StringVar(&a.Event, "event", "", "the hook event this command is configured for (Copilot: preToolUse, permissionRequest, postToolUse)")
	fs.StringVar(&a.Config, "config", "", "config file, read only to find the socket or to judge in-process")
	fs.BoolFunc("interactive", "a person answers the agent's prompts, so ask may be sent as ask (default: the daemon's setting)", func(v string) error {
		b, err := strconv.ParseBool(v)
		a.Interactive = &b
		return err
	})
	pos, err := parseInterleaved(fs, argv)
	if err != nil {
		return a, err
	}
	a.Agent, err = quickhook.AgentName(a.Agent, pos)
	return a, err
}

// writeReply writes exactly the agent's reply and exits with its code.
func writeReply(e env, r agent.Reply) error {
	e.stdout.Write(r.Stdout)
	io.WriteString(e.stderr, r.Stderr)
	if r.ExitCode != 0 {
		return exitError{r.ExitCode}
	}
	return nil
}
