package main

import (
	"context"
	"errors"
	"flag"

	"github.com/narrowd/narrowd/cmd/internal/quickstage"
)

const execUsage = `exec --ticket T [--socket PATH] [--config FILE]
       exec --confine [--write DIR]... -- PROG [ARGS...]

Runs a command in narrowd's own sandbox: new user and network namespaces
with only lo, writes confined by Landlock to the workspace and a private
tmp, seccomp refusing new AF_UNIX sockets and io_uring, no_new_privs. It
needs no root.

--ticket redeems a ticket the daemon issued for one exact command and
working directory: the daemon checks the sandbox from outside before it
releases the command, which then runs with bash -c. A ticket is single-use
and expires; if anything fails nothing runs. The command is the
repository's own code, so it starts without the variables whose names look
like secrets (TOKEN, SECRET, PASSWORD, API_KEY, AUTH, AWS_, ANTHROPIC_, ...);
its stderr gets one line naming them.

--confine runs PROG with no network and writes only beneath the --write
directories (and a private tmp). It only removes rights, so it needs no
daemon and no ticket. It keeps the environment: the daemon confines MCP
servers with it, and their configs pass tokens on purpose.

Exit status: the command's, or 125 when the sandbox could not be built or
checked (nothing ran).`

// execFailed is the exit code when nothing ran.
const execFailed = quickstage.Failed

// runExec is narrowd exec: the sandbox wrapper, and the sandbox stages it
// re-executes narrowd as. quickstage's init runs all of it for the
// arguments it takes exactly as this does; the rest arrives here: help,
// bad flags, --config, a config file that may name the socket in a form
// only the TOML decoder reads.
func runExec(ctx context.Context, e env, args []string) error {
	// The stages run inside the sandbox; nothing else is parsed for them.
	// quickstage's init runs them before the rest of narrowd starts; this
	// is for arguments that reach main all the same.
	if len(args) == 2 && args[0] == "--stage" {
		return exitError{quickstage.Run(args[1], e.stderr)}
	}
	fs := newFlags(e, "exec", execUsage)
	a, configPath := quickstage.ExecFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitError{0}
		}
		return exitError{execFailed}
	}
	a.Args = fs.Args()
	if err := quickstage.CheckExec(*a); err != nil {
		return exitError{quickstage.Fail(e.stderr, err)}
	}
	if a.Confine {
		return exitCode(quickstage.Confine(ctx, a.Writable, a.Args, e.stderr))
	}
	sock := a.Socket
	if sock == "" {
		c, err := loadConfig(e, *configPath)
		if err != nil {
			return exitError{quickstage.Fail(e.stderr, err)}
		}
		c.defaults(e)
		sock = c.Socket
	}
	return exitCode(quickstage.Redeem(ctx, sock, a.Ticket, e.stderr))
}

// exitCode is the command's exit status as runExec returns it.
func exitCode(code int) error {
	if code != 0 {
		return exitError{code}
	}
	return nil
}
