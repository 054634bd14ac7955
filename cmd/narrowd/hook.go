package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

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

// runHook is the hook shim. It builds no engine while the daemon answers.
func runHook(ctx context.Context, e env, args []string) (err error) {
	fs := newFlags(e, "hook", hookUsage)
	agentFlag := fs.String("agent", "", "the agent that runs the hook, or auto to tell from the payload")
	socket := fs.String("socket", "", "the daemon's socket (default $XDG_RUNTIME_DIR/narrowd/narrowd.sock)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the daemon before judging in-process")
	offline := fs.Bool("offline", false, "judge in-process without asking the daemon")
	event := fs.String("event", "", "the hook event this command is configured for (Copilot: preToolUse, permissionRequest, postToolUse)")
	configPath := fs.String("config", "", "config file, read only to find the socket or to judge in-process")
	var inter *bool
	fs.BoolFunc("interactive", "a person answers the agent's prompts, so ask may be sent as ask (default: the daemon's setting)", func(v string) error {
		b, err := strconv.ParseBool(v)
		inter = &b
		return err
	})
	pos, perr := parseInterleaved(fs, args)
	if perr != nil {
		if errors.Is(perr, flag.ErrHelp) {
			return exitError{0}
		}
		// A hook that cannot even parse its arguments must still block.
		return writeReply(e, agent.Fail("", rules.Call{}, "narrowd hook was run with bad arguments"))
	}
	name := *agentFlag
	switch {
	case len(pos) == 1 && name == "":
		name = pos[0]
	case len(pos) > 1 || len(pos) == 1 && name != pos[0]:
		return writeReply(e, agent.Fail("", rules.Call{}, "narrowd hook takes one agent name"))
	case name == "":
		name = "auto"
	}
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
	sock := *socket
	var c fileConfig
	var cerr error
	loaded := false
	load := func() {
		if !loaded {
			c, cerr = loadConfig(e, *configPath)
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

	if !*offline {
		client := daemon.Client{Socket: sock, Timeout: *timeout}
		env, herr := client.HookEvent(ctx, name, *event, payload, inter)
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
	if inter != nil {
		opt.Interactive = *inter
	}
	reply := daemon.OfflineEvent(daemon.OfflineConfig{
		Engine:         c.engine(),
		AllowAtPreTool: c.AbstainForPermissionRequest != nil && !*c.AbstainForPermissionRequest,
		StateDir:       c.StateDir,
	}, name, *event, payload, opt)
	if len(reply.Stdout) > 0 || reply.ExitCode != 0 {
		reply.Stderr = "narrowd: daemon unreachable, evaluated in-process\n" + reply.Stderr
	}
	return writeReply(e, reply)
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
