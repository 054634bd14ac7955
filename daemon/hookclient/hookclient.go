// Package hookclient is the shim's side of narrowd's Unix socket protocol:
// one hook payload out, one reply back. It is light on purpose, so that
// `narrowd hook` can ask the daemon before the rest of narrowd (CEL,
// protobuf, Prometheus) has started; see cmd/internal/quickhook.
// Go initialises a package once its imports are, choosing among the ready
// ones in import-path order, so each import here decides how much of
// narrowd runs first: this package uses only os, syscall, bytes, strconv,
// errors, io and time, not net, strings, fmt or encoding/json, which
// would wait behind protobuf and the crypto packages.
package hookclient

import (
	"bytes"
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
}

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
	conn, err := dial(socket, deadline)
	if err != nil {
		return Reply{}, unreachable(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return Reply{}, unreachable(err)
	}
	if err := samePeer(conn, socket); err != nil {
		return Reply{}, unreachable(err)
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
		k, v, _ := bytes.Cut(line, []byte(":"))
		k, v = bytes.TrimSpace(k), bytes.TrimSpace(v)
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
