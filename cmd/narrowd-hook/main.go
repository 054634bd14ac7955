// Command narrowd-hook is the light form of `narrowd hook`: the same
// arguments, the same replies, in a binary that links none of the engine
// (no CEL, protobuf, Prometheus or command knowledge), so a process an
// agent starts per tool call costs little more than an empty Go binary.
//
//	narrowd-hook [--socket PATH] [--timeout DURATION] [--config FILE]
//	             [--interactive[=false]] [--event EVENT] [--agent] AGENT|auto
//
// It handles only the common case: the daemon answers with a well-formed
// reply, which it writes exactly as `narrowd hook` would. Everything else
// (the daemon down, an answer it cannot use, arguments or a config file
// it does not understand, a payload too large) it hands, with the payload,
// to `narrowd hook` from the same directory, which judges in-process or
// fails safe. If that cannot be started it blocks the call. It never lets
// a call run because something failed.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"
)

// Kept in step with the daemon (daemon.HookPath, daemon.ReplyType,
// agent.MaxPayload); the round-trip test runs this binary against it.
const (
	hookPath   = "/v1/hook/"
	replyType  = "application/vnd.narrowd.reply+json"
	maxPayload = 4 << 20
	maxReply   = 2 * maxPayload
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// args are the parsed arguments; ok is false for anything the full shim
// must see.
type args struct {
	agent, socket, config, event string
	timeout                      time.Duration
	interactive                  *bool
}

func parseArgs(argv []string) (args, bool) {
	fs := flag.NewFlagSet("narrowd-hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var a args
	agentFlag := fs.String("agent", "", "")
	fs.StringVar(&a.socket, "socket", "", "")
	fs.StringVar(&a.config, "config", "", "")
	fs.StringVar(&a.event, "event", "", "")
	fs.DurationVar(&a.timeout, "timeout", 3*time.Second, "")
	fs.BoolFunc("interactive", "", func(v string) error {
		b, err := strconv.ParseBool(v)
		a.interactive = &b
		return err
	})
	var pos []string
	for {
		if err := fs.Parse(argv); err != nil {
			return a, false
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		argv = fs.Args()[1:]
	}
	a.agent = *agentFlag
	switch {
	case len(pos) == 1 && a.agent == "":
		a.agent = pos[0]
	case len(pos) > 1 || len(pos) == 1 && a.agent != pos[0]:
		return a, false
	case a.agent == "":
		a.agent = "auto"
	}
	return a, true
}

func run(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	payload, err := io.ReadAll(io.LimitReader(stdin, maxPayload+1))
	if err != nil {
		// What could be read is gone; the full shim reads the rest and
		// fails safe on what it gets.
		return full(argv, io.MultiReader(bytes.NewReader(payload), stdin), stdout, stderr, false)
	}
	a, ok := parseArgs(argv)
	if !ok || len(payload) > maxPayload {
		return full(argv, bytes.NewReader(payload), stdout, stderr, false)
	}
	sock, ok := socketPath(a)
	if !ok {
		return full(argv, bytes.NewReader(payload), stdout, stderr, false)
	}
	env, err := ask(sock, a, payload)
	if err != nil {
		var unusable *unusableError
		return full(argv, bytes.NewReader(payload), stdout, stderr, !errors.As(err, &unusable))
	}
	stdout.Write(env.Stdout)
	io.WriteString(stderr, env.Stderr)
	return env.ExitCode
}

// socketPath finds the socket as narrowd hook does: the flag, else the
// config file's, else the default. ok is false when the config file exists
// but this binary cannot read it: the full shim reports that.
func socketPath(a args) (string, bool) {
	if a.socket != "" {
		return a.socket, true
	}
	path, explicit := a.config, a.config != ""
	if !explicit {
		switch {
		case os.Getenv("XDG_CONFIG_HOME") != "":
			path = filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "narrowd", "config.toml")
		case os.Getenv("HOME") != "":
			path = filepath.Join(os.Getenv("HOME"), ".config", "narrowd", "config.toml")
		}
	}
	var c struct {
		Socket string `toml:"socket"`
	}
	if path != "" {
		_, err := toml.DecodeFile(path, &c)
		switch {
		case err == nil:
		case errors.Is(err, os.ErrNotExist) && !explicit:
		default:
			return "", false
		}
	}
	if home := os.Getenv("HOME"); home != "" && (c.Socket == "~" || strings.HasPrefix(c.Socket, "~/")) {
		c.Socket = filepath.Join(home, c.Socket[1:])
	}
	if c.Socket != "" {
		return c.Socket, true
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "narrowd", "narrowd.sock"), true
	}
	return filepath.Join(os.TempDir(), "narrowd-"+strconv.Itoa(os.Getuid()), "narrowd.sock"), true
}

// envelope is the daemon's answer (daemon.Envelope).
type envelope struct {
	Stdout   []byte `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
}

// unusableError is an answer that arrived but cannot be trusted.
type unusableError struct{ why string }

func (e *unusableError) Error() string { return "daemon answered " + e.why }

// ask sends the payload to the daemon over one connection and reads the
// reply envelope. Transport failures are plain errors; an answer that is
// not a well-formed envelope is an *unusableError.
func ask(sock string, a args, payload []byte) (envelope, error) {
	timeout := a.timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	deadline := time.Now().Add(timeout)
	conn, err := dial(sock, deadline)
	if err != nil {
		return envelope{}, err
	}
	defer conn.Close()
	conn.SetDeadline(deadline)
	if err := samePeer(conn); err != nil {
		return envelope{}, err
	}

	target := hookPath + url.PathEscape(a.agent)
	q := url.Values{}
	if a.interactive != nil {
		q.Set("interactive", strconv.FormatBool(*a.interactive))
	}
	if a.event != "" {
		q.Set("event", a.event)
	}
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: narrowd\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", target, len(payload))
	if _, err := conn.Write(append([]byte(req), payload...)); err != nil {
		return envelope{}, err
	}
	return readReply(bufio.NewReader(conn))
}

// dial connects to the Unix socket at path. It uses the system calls
// directly rather than package net, which would link the C resolver into
// a default (cgo) build and cost every hook process a dynamic loader.
func dial(path string, deadline time.Time) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	sa := &syscall.SockaddrUnix{Name: path}
	for {
		err = syscall.Connect(fd, sa)
		// A full listen backlog: wait for the daemon to accept, as
		// net.Dial would, until the deadline.
		if err != syscall.EAGAIN || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("connect", err)
	}
	// Non-blocking, so the file is pollable and deadlines work.
	return os.NewFile(uintptr(fd), path), nil
}

// samePeer refuses a daemon that runs as another user.
func samePeer(conn *os.File) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return credErr
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("the daemon runs as uid %d, not %d", cred.Uid, os.Getuid())
	}
	return nil
}

// readReply reads one HTTP/1.1 response with a Content-Length body and
// decodes the envelope. Anything else (another status, a chunked body,
// bad JSON, an exit code narrowd never sends) is unusable.
func readReply(br *bufio.Reader) (envelope, error) {
	status, err := br.ReadString('\n')
	if err != nil {
		return envelope{}, err
	}
	if f := strings.Fields(status); len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/1.") || f[1] != "200" {
		return envelope{}, &unusableError{"status " + strings.TrimSpace(status)}
	}
	length, ctype := -1, ""
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return envelope{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "content-length":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > maxReply {
				return envelope{}, &unusableError{"a bad Content-Length"}
			}
			length = n
		case "content-type":
			ctype = v
		case "transfer-encoding":
			return envelope{}, &unusableError{"a " + v + " body"}
		}
	}
	if length < 0 || ctype != replyType {
		return envelope{}, &unusableError{"without a reply envelope"}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		return envelope{}, err
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return envelope{}, &unusableError{"a malformed envelope"}
	}
	// Exit 1 lets the call run in most agents; narrowd never sends it.
	if env.ExitCode != 0 && env.ExitCode != 2 {
		return envelope{}, &unusableError{"exit code " + strconv.Itoa(env.ExitCode)}
	}
	return env, nil
}

// full runs `narrowd hook` from this binary's directory with the same
// arguments and the payload, and exits as it does. offline (the daemon
// could not be reached) tells it not to ask the daemon again.
func full(argv []string, payload io.Reader, stdout, stderr io.Writer, offline bool) int {
	bin := "narrowd"
	if self, err := os.Executable(); err == nil {
		bin = filepath.Join(filepath.Dir(self), "narrowd")
	}
	cmdArgs := []string{"hook"}
	if offline {
		cmdArgs = append(cmdArgs, "--offline")
	}
	cmd := exec.Command(bin, append(cmdArgs, argv...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = payload, stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return ee.ExitCode()
	}
	// The full shim could not run: block in every agent (exit 2 with a
	// reason blocks each one's command hook; the block decision blocks
	// those that read stdout first).
	reason := "narrowd: could not check this call: narrowd-hook could not run narrowd (" + bin + ")"
	out, _ := json.Marshal(struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}{"block", reason})
	stdout.Write(append(out, '\n'))
	io.WriteString(stderr, reason+"\n")
	return 2
}
