// Package hookclient is the client's side of narrowd's Unix socket
// protocol for the commands that must not wait for the rest of narrowd:
// the shim's hook call (one hook payload out, one reply back; see
// cmd/internal/quickhook) and the ticket's claim and sandbox check of
// `narrowd exec --ticket` ([Post]; see cmd/internal/quickstage). It is
// light on purpose, so that both can ask the daemon before the rest of
// narrowd (CEL, protobuf, Prometheus) has started.
// Go initialises a package once its imports are, choosing among the ready
// ones in import-path order, so each import here decides how much of
// narrowd runs first: this package uses only os, syscall, bytes, strconv,
// errors, io, context and time, not net, strings, fmt or encoding/json,
// which would wait behind protobuf and the crypto packages.
package hookclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"
)

// The protocol, shared with the daemon's listener.
const (
	// HookPath is the shim's endpoint; the agent's name (or "auto")
	// follows it.
	HookPath = "/v1/hook/"
	// ReplyType is the media type of the JSON reply envelope
	// (daemon.Envelope): what a daemon answers a client that does not
	// accept [RawReplyType], and what daemons before it always answered.
	ReplyType = "application/vnd.narrowd.reply+json"
	// RawReplyType is the media type of a raw reply: the body is the
	// reply's stdout followed by its stderr, with the exit code, the
	// length of stdout and the audit id in headers. It needs no JSON.
	RawReplyType = "application/vnd.narrowd.reply+raw"
	// MaxPayload is the largest hook payload narrowd accepts, in bytes.
	MaxPayload = 4 << 20

	// ExitCodeHeader, StdoutLengthHeader and IDHeader carry a raw
	// reply's exit code, the length of its stdout and its audit id.
	ExitCodeHeader     = "Narrowd-Exit-Code"
	StdoutLengthHeader = "Narrowd-Stdout-Length"
	IDHeader           = "Narrowd-Id"

	// maxResponse bounds what is read back: a reply may quote the payload.
	maxResponse = 2*MaxPayload + 64<<10
)

// ErrUnreachable reports that the daemon could not be asked: no socket,
// nobody listening, a socket owned by another user, a timeout, or a
// connection that broke before the answer arrived. The shim then judges
// the call in-process.
var ErrUnreachable = errors.New("daemon unreachable")

// UnusableError is an answer that arrived but cannot be trusted: another
// status, a body that is not a reply, an exit code narrowd never sends.
// The shim must block.
type UnusableError struct{ Why string }

func (e *UnusableError) Error() string { return "daemon answered " + e.Why }

// Request is one hook call.
type Request struct {
	// Agent is the agent's name, or "auto" to tell it from the payload.
	Agent string
	// Event is the hook's configured event (narrowd hook --event), or "".
	Event string
	// Interactive, when not nil, overrides the daemon's default.
	Interactive *bool
	// Payload is the agent's hook payload, as read.
	Payload []byte
	// Deadline is when the shim stops waiting and answers in-process:
	// the daemon neither judges nor records as answered a call it
	// reaches after it (the zero time: none). [Ask] sets its own.
	Deadline time.Time
}

// DeadlineParam is the query parameter that carries [Request.Deadline],
// in Unix milliseconds.
const DeadlineParam = "deadline"

// Reply is the daemon's answer: exactly what the shim writes and the exit
// code it ends with, and the audit id of the call. A daemon that answered
// a JSON envelope leaves all but JSON empty; the caller decodes it.
type Reply struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
	ID       string
	JSON     []byte
}

// Ask sends req to the daemon listening on socket and returns its reply.
// Failures to reach the daemon wrap [ErrUnreachable]; an answer that is not
// a well-formed reply is an [*UnusableError].
func Ask(socket string, deadline time.Time, req Request) (Reply, error) {
	conn, err := connect(socket, deadline)
	if err != nil {
		return Reply{}, unreachable(err)
	}
	defer conn.Close()
	if req.Deadline.IsZero() {
		req.Deadline = deadline
	}
	if _, err := conn.Write(Encode(req)); err != nil {
		return Reply{}, unreachable(err)
	}
	resp, err := io.ReadAll(io.LimitReader(conn, maxResponse+1))
	if err != nil {
		return Reply{}, unreachable(err)
	}
	return Decode(resp)
}

// connect dials the daemon's socket with deadline set on the connection,
// and checks that the daemon runs as this user.
func connect(socket string, deadline time.Time) (*os.File, error) {
	conn, err := dial(socket, deadline)
	if err != nil {
		return nil, err
	}
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return nil, err
	}
	if err := samePeer(conn, socket); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// unreachableError wraps [ErrUnreachable] with its cause.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return ErrUnreachable.Error() + ": " + e.err.Error() }
func (e *unreachableError) Unwrap() []error {
	return []error{ErrUnreachable, e.err}
}

func unreachable(err error) error { return &unreachableError{err} }

// Encode is the HTTP/1.1 request for req, head and body in one write.
func Encode(req Request) []byte {
	target := HookPath + escape(req.Agent)
	sep := "?"
	if req.Event != "" {
		target += sep + "event=" + escape(req.Event)
		sep = "&"
	}
	if req.Interactive != nil {
		target += sep + "interactive=" + strconv.FormatBool(*req.Interactive)
		sep = "&"
	}
	if !req.Deadline.IsZero() {
		target += sep + DeadlineParam + "=" + strconv.FormatInt(req.Deadline.UnixMilli(), 10)
	}
	head := "POST " + target + " HTTP/1.1\r\nHost: narrowd\r\nContent-Type: application/json\r\nAccept: " +
		RawReplyType + "\r\nContent-Length: " + strconv.Itoa(len(req.Payload)) + "\r\nConnection: close\r\n\r\n"
	return append([]byte(head), req.Payload...)
}

// escape percent-encodes everything but RFC 3986's unreserved characters,
// which is valid in a path segment and a query value alike.
func escape(s string) string {
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b = append(b, c)
		default:
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}

// Decode reads one whole HTTP/1.1 response (the daemon closes the
// connection after it) with a Content-Length body. A response cut short is
// unreachable; anything else that is not a reply is unusable.
func Decode(resp []byte) (Reply, error) {
	if len(resp) > maxResponse {
		return Reply{}, &UnusableError{"more than " + strconv.Itoa(maxResponse) + " bytes"}
	}
	head, body, ok := bytes.Cut(resp, []byte("\r\n\r\n"))
	if !ok {
		return Reply{}, unreachable(io.ErrUnexpectedEOF)
	}
	lines := bytes.Split(head, []byte("\r\n"))
	status := bytes.Fields(lines[0])
	if len(status) < 2 || !bytes.HasPrefix(status[0], []byte("HTTP/1.")) || string(status[1]) != "200" {
		return Reply{}, &UnusableError{"status " + strconv.Quote(string(lines[0]))}
	}
	var ctype, id string
	length, exit, outLen := -1, -1, -1
	for _, line := range lines[1:] {
		k, v, ok := headerLine(line)
		if !ok {
			return Reply{}, &UnusableError{"a malformed header line"}
		}
		var err error
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			length, err = count(v)
		case bytes.EqualFold(k, []byte("Content-Type")):
			ctype = string(v)
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			return Reply{}, &UnusableError{"a " + strconv.Quote(string(v)) + " body"}
		case bytes.EqualFold(k, []byte(ExitCodeHeader)):
			exit, err = count(v)
		case bytes.EqualFold(k, []byte(StdoutLengthHeader)):
			outLen, err = count(v)
		case bytes.EqualFold(k, []byte(IDHeader)):
			id = string(v)
		}
		if err != nil {
			return Reply{}, &UnusableError{"a bad " + strconv.Quote(string(k)) + " header"}
		}
	}
	switch {
	case length < 0:
		return Reply{}, &UnusableError{"without a Content-Length"}
	case len(body) < length:
		return Reply{}, unreachable(io.ErrUnexpectedEOF)
	case len(body) > length:
		return Reply{}, &UnusableError{"more than its Content-Length"}
	}
	switch ctype {
	case ReplyType:
		return Reply{JSON: body}, nil
	case RawReplyType:
	default:
		return Reply{}, &UnusableError{"a " + strconv.Quote(ctype) + " body"}
	}
	if err := CheckExitCode(exit); err != nil {
		return Reply{}, err
	}
	if outLen < 0 || outLen > len(body) {
		return Reply{}, &UnusableError{"a bad " + StdoutLengthHeader}
	}
	return Reply{Stdout: body[:outLen:outLen], Stderr: body[outLen:], ExitCode: exit, ID: id}, nil
}

// CheckExitCode refuses an exit code narrowd never sends: exit 1 lets the
// call run in most agents.
func CheckExitCode(code int) error {
	if code != 0 && code != 2 {
		return &UnusableError{"exit code " + strconv.Itoa(code)}
	}
	return nil
}

// count parses a non-negative decimal header value.
func count(v []byte) (int, error) {
	n, err := strconv.Atoi(string(v))
	if err == nil && n < 0 {
		err = strconv.ErrRange
	}
	return n, err
}

// dial connects to the Unix socket at path with the system calls
// themselves: package net is initialised late, and links the C resolver
// into a cgo build.
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
		return nil, &os.PathError{Op: "connect", Path: path, Err: err}
	}
	// Non-blocking, so the file is pollable and deadlines work.
	return os.NewFile(uintptr(fd), path), nil
}

// samePeer refuses a daemon that runs as another user: a socket answered
// by someone else gets no payload.
func samePeer(conn *os.File, path string) error {
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
		return os.NewSyscallError("getsockopt SO_PEERCRED", credErr)
	}
	if int(cred.Uid) != os.Getuid() {
		return errors.New("the daemon on " + path + " runs as uid " + strconv.Itoa(int(cred.Uid)) + ", not " + strconv.Itoa(os.Getuid()))
	}
	return nil
}

// The ticket protocol (`narrowd exec --ticket T`), shared with the
// daemon's handlers. Its bodies are small JSON objects; the caller
// encodes and decodes them (encoding/json is not for this package).
const (
	// ExecClaimPath takes a ticket for the calling wrapper.
	ExecClaimPath = "/v1/exec/claim"
	// ExecVerifyPath asks the daemon to check the wrapper's sandbox from
	// outside; on success the reply carries the command text.
	ExecVerifyPath = "/v1/exec/verify"
	// ExecDonePath tells the daemon the released command exited, so that
	// it applies what the run left in its overlay (issue 16).
	ExecDonePath = "/v1/exec/done"
)

// ExecClaim is the daemon's answer to a claimed ticket: what the wrapper
// needs to build the sandbox, never the command itself.
type ExecClaim struct {
	Claim    string   `json:"claim"`
	Cwd      string   `json:"cwd"`
	Writable []string `json:"writable"`
	// Protected are the patterns, relative to each writable root, that
	// the sandbox keeps read-only; Own are narrowd's own absolute paths,
	// read-only where they lie in a writable root; HomeAllow extends the
	// home allowlist. The daemon verifies the result from outside.
	Protected []string `json:"protected,omitempty"`
	Own       []string `json:"own,omitempty"`
	HomeAllow []string `json:"home_allow,omitempty"`
	// Overlay, when the daemon keeps the run's changes for undo, is the
	// overlay to mount over each writable root.
	Overlay []ExecLayer `json:"overlay,omitempty"`
}

// ExecLayer is the overlay of one writable root: lowerdir Root, upperdir
// Upper, workdir Work.
type ExecLayer struct {
	Root  string `json:"root"`
	Upper string `json:"upper"`
	Work  string `json:"work"`
}

// ClaimRequest is the body of a claim.
type ClaimRequest struct {
	Ticket string `json:"ticket"`
}

// VerifyRequest is the body of a sandbox check: the held sandbox's pid
// and the Landlock ABI it got.
type VerifyRequest struct {
	Claim       string `json:"claim"`
	Pid         int    `json:"pid"`
	LandlockABI int    `json:"landlock_abi"`
}

// VerifyReply is a passed check's answer: the command to release.
type VerifyReply struct {
	Command string `json:"command"`
	// Run, when the run's changes go through an overlay, is what the
	// wrapper sends to ExecDonePath once the command exits; ID is the
	// call's audit id, for `narrowd apply ID` should that fail.
	Run string `json:"run,omitempty"`
	ID  string `json:"id,omitempty"`
}

// DoneRequest is the body of ExecDonePath: the run and the command's
// exit status.
type DoneRequest struct {
	Run  string `json:"run"`
	Code int    `json:"code"`
}

// DoneReply is what the daemon did with the run's changes, for the
// wrapper to print on the command's stderr when Message is set.
type DoneReply struct {
	Message string `json:"message,omitempty"`
}

// ExecRefusal is the body of a refused claim or check.
type ExecRefusal struct {
	Error string `json:"error"`
}

// maxPostResponse bounds a ticket answer (the daemon's client reads as
// much).
const maxPostResponse = 2 << 20

// Response is a daemon's answer to [Post].
type Response struct {
	// Status is the status line after the protocol: "200 OK".
	Status string
	// StatusCode is its number.
	StatusCode int
	Body       []byte
}

// Post sends body, a JSON object, to the daemon on socket at path and
// returns its answer, whatever its status. It gives up at deadline, or
// when ctx is done. Failures to reach the daemon or to read the whole
// answer wrap [ErrUnreachable]; an answer that is not HTTP is an
// [*UnusableError]. Both requests of a ticket must come from the process
// that claimed it: the daemon checks the peer of each connection.
func Post(ctx context.Context, socket string, deadline time.Time, path string, body []byte) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, unreachable(err)
	}
	conn, err := connect(socket, deadline)
	if err != nil {
		return Response{}, unreachable(err)
	}
	defer conn.Close()
	// A done ctx ends the exchange at once: a past deadline wakes the
	// blocked read or write.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	head := "POST " + path + " HTTP/1.1\r\nHost: narrowd\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n"
	if _, err := conn.Write(append([]byte(head), body...)); err != nil {
		return Response{}, unreachable(ctxErr(ctx, err))
	}
	resp, err := io.ReadAll(io.LimitReader(conn, maxPostResponse+64<<10+1))
	if err != nil {
		return Response{}, unreachable(ctxErr(ctx, err))
	}
	return DecodeResponse(resp)
}

// ctxErr is ctx's error once it is done, else err.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// DecodeResponse reads one whole HTTP/1.1 response of a connection the
// daemon closed after it: a body of Content-Length bytes, or chunked, as
// the daemon sends one that does not fit its buffer. A response cut
// short is unreachable; anything else that is not HTTP is unusable.
func DecodeResponse(resp []byte) (Response, error) {
	head, body, ok := bytes.Cut(resp, []byte("\r\n\r\n"))
	if !ok {
		return Response{}, unreachable(io.ErrUnexpectedEOF)
	}
	if bytes.Count(head, []byte("\n")) != bytes.Count(head, []byte("\r\n")) || bytes.Count(head, []byte("\r")) != bytes.Count(head, []byte("\r\n")) {
		// A line ended by a bare LF (or holding a bare CR) is read
		// differently by other HTTP readers; the daemon never sends one.
		return Response{}, &UnusableError{"a header line not ended by CRLF"}
	}
	lines := bytes.Split(head, []byte("\r\n"))
	proto, status, _ := bytes.Cut(lines[0], []byte(" "))
	code, err := count(status[:min(3, len(status))])
	// The daemon answers HTTP/1.1, the request's version; 1.0 would
	// also change how a body ends.
	if !bytes.Equal(proto, []byte("HTTP/1.1")) || len(status) < 3 || err != nil || len(status) > 3 && status[3] != ' ' {
		return Response{}, &UnusableError{"status " + strconv.Quote(string(lines[0]))}
	}
	length, chunked := -1, false
	for _, line := range lines[1:] {
		k, v, ok := headerLine(line)
		if !ok {
			return Response{}, &UnusableError{"a malformed header line"}
		}
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if length, err = count(v); err != nil {
				return Response{}, &UnusableError{"a bad Content-Length"}
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			if !bytes.EqualFold(v, []byte("chunked")) {
				return Response{}, &UnusableError{"a " + strconv.Quote(string(v)) + " body"}
			}
			chunked = true
		}
	}
	r := Response{Status: string(status), StatusCode: code}
	switch {
	case chunked:
		r.Body, err = dechunk(body)
		return r, err
	case length < 0:
		return Response{}, &UnusableError{"without a Content-Length"}
	case len(body) < length:
		return Response{}, unreachable(io.ErrUnexpectedEOF)
	case len(body) > length:
		return Response{}, &UnusableError{"more than its Content-Length"}
	}
	r.Body = body
	return r, nil
}

// headerLine splits a header line of the daemon's response: a name
// without white space, a colon and a value. ok is false for anything
// else, and for a stray line end, in which a reader that ends lines
// differently would find another header.
func headerLine(line []byte) (k, v []byte, ok bool) {
	k, v, ok = bytes.Cut(line, []byte(":"))
	if !ok || len(k) == 0 || bytes.ContainsAny(k, " \t") || bytes.ContainsAny(line, "\r\n") {
		return nil, nil, false
	}
	return k, bytes.TrimSpace(v), true
}

// dechunk decodes a chunked body (RFC 9112 §7.1): hexadecimal sizes,
// extensions and trailers ignored.
func dechunk(b []byte) ([]byte, error) {
	var out []byte
	for {
		line, rest, ok := bytes.Cut(b, []byte("\r\n"))
		if !ok {
			return nil, unreachable(io.ErrUnexpectedEOF)
		}
		size, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseUint(string(bytes.TrimSpace(size)), 16, 31)
		if err != nil {
			return nil, &UnusableError{"a bad chunk size"}
		}
		if n == 0 {
			// Trailers, if any, then the blank line.
			if !bytes.HasSuffix(rest, []byte("\r\n")) {
				return nil, unreachable(io.ErrUnexpectedEOF)
			}
			return out, nil
		}
		if uint64(len(rest)) < n+2 {
			return nil, unreachable(io.ErrUnexpectedEOF)
		}
		if rest[n] != '\r' || rest[n+1] != '\n' {
			return nil, &UnusableError{"a chunk longer than its size"}
		}
		if len(out)+int(n) > maxPostResponse {
			return nil, &UnusableError{"more than " + strconv.Itoa(maxPostResponse) + " bytes"}
		}
		out = append(out, rest[:n]...)
		b = rest[n+2:]
	}
}
