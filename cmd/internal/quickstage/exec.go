package quickstage

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/narrowd/narrowd/cmd/internal/quickhook"
	"github.com/narrowd/narrowd/daemon/hookclient"
	"github.com/narrowd/narrowd/sandbox"
)

// ExecArgs are the arguments of `narrowd exec` this package runs itself.
type ExecArgs struct {
	Ticket, Socket string
	Confine        bool
	Writable       []string
	// Args are those left after the flags: the confined program.
	Args []string
}

// ExecFlags defines main's flags of `narrowd exec` on fs: what
// [ParseExec] must take exactly as package flag takes it. config is the
// one flag ParseExec leaves to main.
func ExecFlags(fs *flag.FlagSet) (a *ExecArgs, config *string) {
	a = new(ExecArgs)
	fs.StringVar(&a.Ticket, "ticket", "", "the ticket the daemon issued for the command")
	fs.StringVar(&a.Socket, "socket", "", "the daemon's socket (default $XDG_RUNTIME_DIR/narrowd/narrowd.sock)")
	config = fs.String("config", "", "config file, read only to find the socket")
	fs.BoolVar(&a.Confine, "confine", false, "run PROG ARGS with no network and writes confined to the --write directories")
	fs.Func("write", "a directory the confined program may write beneath (repeatable)", func(v string) error {
		a.Writable = append(a.Writable, v)
		return nil
	})
	return a, config
}

// ParseExec parses the arguments of `narrowd exec` as package flag does
// for main: -name or --name, a string's value after = or as the next
// argument, a bare boolean true, the flags ending at "--" or the first
// argument that is not one. ok is false for everything main must see
// for itself: --config (the socket may then come from a file only the
// TOML decoder reads right), help, an unknown flag, a bad value or
// syntax, --stage.
func ParseExec(argv []string) (a ExecArgs, ok bool) {
	for len(argv) > 0 {
		s := argv[0]
		if len(s) < 2 || s[0] != '-' {
			break
		}
		if s == "--" {
			argv = argv[1:]
			break
		}
		name, value, hasValue, ok := quickhook.FlagSyntax(s)
		if !ok {
			return a, false
		}
		argv = argv[1:]
		switch name {
		case "confine":
			b, err := quickhook.BoolFlag(value, hasValue)
			if err != nil {
				return a, false
			}
			a.Confine = b
			continue
		case "ticket", "socket", "write":
		default:
			return a, false
		}
		if !hasValue {
			if len(argv) == 0 {
				return a, false
			}
			value, argv = argv[0], argv[1:]
		}
		switch name {
		case "ticket":
			a.Ticket = value
		case "socket":
			a.Socket = value
		case "write":
			a.Writable = append(a.Writable, value)
		}
	}
	a.Args = argv
	return a, true
}

// Exec is `narrowd exec` for the arguments [ParseExec] takes, where it
// can tell the daemon's socket as main would: it runs the command and
// returns its exit code, and done. Otherwise it has done nothing and
// returns done false: main decides. Once it has claimed a ticket it never
// returns done false.
func Exec(argv []string, stderr io.Writer, getenv func(string) string) (code int, done bool) {
	a, ok := ParseExec(argv)
	if !ok {
		return 0, false
	}
	if err := CheckExec(a); err != nil {
		return Fail(stderr, err), true
	}
	sock := ""
	if !a.Confine {
		// A ticket: the daemon's socket, before anything is done.
		if sock, ok = SocketPath(a.Socket, getenv); !ok {
			return 0, false
		}
	}
	// From here on as main does: an interrupt or termination is
	// forwarded to the command.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if a.Confine {
		return Confine(ctx, a.Writable, a.Args, stderr), true
	}
	return Redeem(ctx, sock, a.Ticket, stderr), true
}

// CheckExec refuses the combinations of arguments narrowd exec refuses.
func CheckExec(a ExecArgs) error {
	switch {
	case a.Confine && a.Ticket != "":
		return errors.New("use either --confine or --ticket")
	case a.Confine && len(a.Args) == 0:
		return errors.New("--confine needs a program: narrowd exec --confine [--write DIR]... -- PROG [ARGS...]")
	case a.Confine:
		return nil
	case a.Ticket != "" && (len(a.Args) != 0 || len(a.Writable) != 0):
		return errors.New("--ticket takes no program and no --write: the ticket names the command")
	case a.Ticket != "":
		return nil
	}
	return errors.New("narrowd exec needs --ticket T or --confine")
}

// SocketPath finds the daemon's socket as the early hook does
// ([quickhook.SocketPath]) from the default config file, which must also
// be one main accepts ([ConfigAccepted]): otherwise ok is false, main's
// TOML decoder reads it and reports.
func SocketPath(flagValue string, getenv func(string) string) (string, bool) {
	return quickhook.SocketPath(flagValue, "", getenv, ConfigAccepted)
}

// Fail says on stderr that nothing ran, and why, and returns [Failed].
func Fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "narrowd exec: %v; nothing ran\n", err)
	return Failed
}

// Confine is narrowd exec --confine: it runs args with no network and
// writes only beneath writable, and returns the exit code.
func Confine(ctx context.Context, writable, args []string, stderr io.Writer) int {
	// narrowd's own use (MCP servers): their files live in the home
	// directory, which stays in view minus the secret locations.
	sb, err := sandbox.Start("", sandbox.Spec{Writable: writable, Args: args, KeepHome: true})
	if err != nil {
		return Fail(stderr, err)
	}
	return Wait(ctx, sb)
}

// Wait waits for the sandboxed program, forwarding the end of ctx (an
// interrupt or termination), and returns its exit status.
func Wait(ctx context.Context, sb *sandbox.Sandbox) int {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		// The command is its PID namespace's init, which ignores a
		// SIGTERM it has no handler for: give it a moment, then kill the
		// whole namespace.
		sb.Signal(syscall.SIGTERM)
		select {
		case <-time.After(2 * time.Second):
			sb.Signal(syscall.SIGKILL)
		case <-done:
		}
	}()
	code, err := sb.Wait()
	close(done)
	if err != nil && code == 0 {
		code = 1
	}
	return code
}

// ticketTimeout bounds each of a ticket's two requests.
const ticketTimeout = 10 * time.Second

// Redeem is narrowd exec --ticket: claim the ticket from the daemon on
// sock, build the sandbox held, let the daemon check it from outside, and
// only then run the command text the daemon releases. It returns the
// command's exit code, or [Failed] when nothing ran.
func Redeem(ctx context.Context, sock, ticket string, stderr io.Writer) int {
	var cl hookclient.ExecClaim
	if err := post(ctx, sock, hookclient.ExecClaimPath, hookclient.ClaimRequest{Ticket: ticket}, &cl); err != nil {
		return Fail(stderr, fmt.Errorf("the daemon refused the ticket: %w", err))
	}
	// The repository's code runs without being asked: no secret variables.
	// Protected is never nil here: an old daemon that sends no list gets
	// the sandbox's fallback list, not none.
	spec := sandbox.Spec{Writable: cl.Writable, Dir: cl.Cwd, DropSecretEnv: true,
		ProtectedPatterns: cl.Protected, Protected: cl.Own, HomeAllow: cl.HomeAllow}
	for _, l := range cl.Overlay {
		spec.Overlays = append(spec.Overlays, sandbox.Overlay{Root: l.Root, Upper: l.Upper, Work: l.Work})
	}
	sb, err := sandbox.Start("", spec)
	if err != nil {
		return Fail(stderr, err)
	}
	r := sb.Ready()
	var v hookclient.VerifyReply
	err = post(ctx, sock, hookclient.ExecVerifyPath, hookclient.VerifyRequest{Claim: cl.Claim, Pid: r.Pid, LandlockABI: r.LandlockABI}, &v)
	if err == nil && v.Command == "" {
		err = errors.New("the daemon released no command")
	}
	if err != nil {
		sb.Abort()
		return Fail(stderr, fmt.Errorf("the daemon's check of the sandbox failed: %w", err))
	}
	if err := sb.Release(v.Command); err != nil {
		sb.Abort()
		return Fail(stderr, err)
	}
	code := Wait(ctx, sb)
	if v.Run != "" {
		finishRun(sock, v, code, stderr)
	}
	return code
}

// doneTimeout bounds the daemon's apply of a run's changes: one rename
// per changed tree, and a hash of what it replaces.
const doneTimeout = 2 * time.Minute

// finishRun asks the daemon to apply what the run left in its overlay,
// and prints what the daemon says about it (changes over the budget
// were not applied, and how to apply or discard them). It is not
// cancelled by the interrupt that ended the command: the changes must
// be applied or kept either way.
func finishRun(sock string, v hookclient.VerifyReply, code int, stderr io.Writer) {
	body, _ := json.Marshal(hookclient.DoneRequest{Run: v.Run, Code: code})
	resp, err := hookclient.Post(context.Background(), sock, time.Now().Add(doneTimeout), hookclient.ExecDonePath, body)
	var done hookclient.DoneReply
	if err == nil && resp.StatusCode != 200 {
		var ref hookclient.ExecRefusal
		json.Unmarshal(resp.Body, &ref)
		err = fmt.Errorf("%s %s", resp.Status, ref.Error)
	}
	if err == nil {
		err = json.Unmarshal(resp.Body, &done)
	}
	if err != nil {
		fmt.Fprintf(stderr, "narrowd: the command's changes to the workspace were NOT applied (the daemon did not answer: %v); they are kept: `narrowd show %s`, then `narrowd apply %s` or `narrowd discard %s`\n", err, v.ID, v.ID, v.ID)
		return
	}
	if done.Message != "" {
		fmt.Fprintf(stderr, "%s\n", done.Message)
	}
}

// post sends one JSON request on the socket and decodes the answer; a
// refusal's reason becomes the error.
func post(ctx context.Context, sock, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := hookclient.Post(ctx, sock, time.Now().Add(ticketTimeout), path, body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		var ref hookclient.ExecRefusal
		if json.Unmarshal(resp.Body, &ref) == nil && ref.Error != "" {
			return errors.New(ref.Error)
		}
		return fmt.Errorf("daemon answered %s", resp.Status)
	}
	return json.Unmarshal(resp.Body, out)
}
