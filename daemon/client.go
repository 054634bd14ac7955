package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/daemon/hookclient"
)

// ErrUnreachable reports that the daemon could not be asked: no socket,
// nobody listening, a socket owned by another user, a timeout, or a
// connection that broke before the answer arrived. The shim then judges
// the call in-process.
var ErrUnreachable = hookclient.ErrUnreachable

// Client is the shim's side of the Unix socket protocol.
type Client struct {
	// Socket is the daemon's socket path.
	Socket string
	// Timeout bounds one whole exchange; 0 means 3 s.
	Timeout time.Duration
}

func (c *Client) http() *http.Client {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:        c.dial,
			DisableCompression: true,
			DisableKeepAlives:  true,
		},
	}
}

// dial connects to the socket and checks that the daemon runs as this
// user: a socket answered by someone else gets nothing.
func (c *Client) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		return nil, err
	}
	uid, err := unixPeerUID(conn.(*net.UnixConn))
	if err != nil {
		conn.Close()
		return nil, err
	}
	if int(uid) != os.Getuid() {
		conn.Close()
		return nil, fmt.Errorf("the daemon on %s runs as uid %d, not %d", c.Socket, uid, os.Getuid())
	}
	return conn, nil
}

// Hook sends one payload for the named agent ("auto" to detect it) and
// returns the daemon's reply. interactive, when not nil, overrides the
// daemon's default. Transport failures wrap [ErrUnreachable]; an answer
// that arrived but is not a well-formed envelope is a plain error, for
// which the shim must block.
func (c *Client) Hook(ctx context.Context, name string, payload []byte, interactive *bool) (Envelope, error) {
	return c.HookEvent(ctx, name, "", payload, interactive)
}

// HookEvent is [Client.Hook] for a hook whose configured event is known
// (narrowd hook --event); "" is the same as Hook. It speaks through
// [hookclient.Ask], the same code the early shim runs.
func (c *Client) HookEvent(ctx context.Context, name, event string, payload []byte, interactive *bool) (Envelope, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	r, err := hookclient.Ask(c.Socket, deadline, hookclient.Request{Agent: name, Event: event, Interactive: interactive, Payload: payload})
	if err != nil {
		return Envelope{}, err
	}
	if r.JSON == nil {
		return Envelope{Reply: agent.Reply{Stdout: r.Stdout, Stderr: string(r.Stderr), ExitCode: r.ExitCode}, ID: r.ID}, nil
	}
	// A daemon from before the raw reply.
	env, err := decodeEnvelope(r.JSON)
	if err != nil {
		return Envelope{}, err
	}
	if err := hookclient.CheckExitCode(env.ExitCode); err != nil {
		return Envelope{}, err
	}
	return env, nil
}

// decodeEnvelope reads a reply envelope strictly: one JSON object with
// stdout, stderr and exit_code all present (stdout may be null, as an
// empty one is encoded), exit_code a number. Decoded loosely, {} or null
// from a listener that is not narrowd became a zero envelope, exit 0
// with empty output: an abstain, which lets the call run.
func decodeEnvelope(b []byte) (Envelope, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return Envelope{}, &hookclient.UnusableError{Why: "a malformed envelope"}
	}
	for _, k := range [...]string{"stdout", "stderr", "exit_code"} {
		if _, ok := fields[k]; !ok {
			return Envelope{}, &hookclient.UnusableError{Why: "an envelope without " + k}
		}
	}
	if string(fields["exit_code"]) == "null" || string(fields["stderr"]) == "null" {
		return Envelope{}, &hookclient.UnusableError{Why: "an envelope without an exit code"}
	}
	var env Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return Envelope{}, &hookclient.UnusableError{Why: "a malformed envelope"}
	}
	return env, nil
}

// Status asks the daemon for its [Status].
func (c *Client) Status(ctx context.Context) (Status, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://narrowd"+StatusPath, nil)
	if err != nil {
		return Status{}, err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return Status{}, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Status{}, fmt.Errorf("daemon answered %s", resp.Status)
	}
	var st Status
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st); err != nil {
		return Status{}, fmt.Errorf("daemon answered a malformed status: %w", err)
	}
	return st, nil
}
