package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/narrowd/narrowd/daemon/agent"
)

// ErrUnreachable reports that the daemon could not be asked: no socket,
// nobody listening, a socket owned by another user, a timeout, or a
// connection that broke before the answer arrived. The shim then judges
// the call in-process.
var ErrUnreachable = errors.New("daemon unreachable")

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
// (narrowd hook --event); "" is the same as Hook. Daemons that predate the
// event parameter ignore it.
func (c *Client) HookEvent(ctx context.Context, name, event string, payload []byte, interactive *bool) (Envelope, error) {
	u := "http://narrowd" + HookPath + url.PathEscape(name)
	q := url.Values{}
	if interactive != nil {
		q.Set("interactive", strconv.FormatBool(*interactive))
	}
	if event != "" {
		q.Set("event", event)
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(payload))
	if err != nil {
		return Envelope{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http().Do(req)
	if err != nil {
		return Envelope{}, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 2*agent.MaxPayload))
	if err != nil {
		return Envelope{}, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Envelope{}, fmt.Errorf("daemon answered %s", resp.Status)
	}
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return Envelope{}, fmt.Errorf("daemon answered a malformed envelope: %w", err)
	}
	// Exit 1 lets the call run in most agents; narrowd never sends it.
	if env.ExitCode != 0 && env.ExitCode != 2 {
		return Envelope{}, fmt.Errorf("daemon answered exit code %d", env.ExitCode)
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
