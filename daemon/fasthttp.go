package daemon

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narrowd/narrowd/daemon/agent"
)

// fastServer answers the one request shape a hook listener sees all day
// (a POST to a known path with a Content-Length body, from the daemon's
// own user) itself, and hands every other connection, with the bytes it
// has read so far, to a net/http server that serves it as if it had
// accepted it. net/http's per-request machinery (header maps, a
// background read goroutine and its extra syscalls, response buffers)
// was a third of the daemon's CPU per decision on keep-alive hook
// connections.
//
// The fast path takes only what it fully understands; anything unusual
// (another method or path, chunked bodies, Expect, an oversized or
// malformed head, a body over agent.MaxPayload, a peer of another user)
// goes to net/http, whose answer (400, 403, 404, 405, 431, or a blocking
// reply) is then the one the client gets. A connection handed over stays
// with net/http.
type fastServer struct {
	s *Server
	// route returns the handler for a request target's path.
	route func(path string) fastHandler
	// slow is the net/http server that handed-over connections go to.
	slow    *http.Server
	handoff *chanListener

	readTimeout, writeTimeout, idleTimeout time.Duration

	mu      sync.Mutex
	ln      net.Listener
	conns   map[*fastConn]struct{}
	closing atomic.Bool
	wg      sync.WaitGroup

	// next hands an accepted connection to a worker waiting for one;
	// stop, closed by Shutdown, ends the waiting workers.
	next     chan *fastConn
	stop     chan struct{}
	stopOnce sync.Once
}

// workerIdle is how long a worker goroutine waits for another connection
// before it ends.
const workerIdle = 5 * time.Second

// fastHandler answers one request whose body has been read (or failed to
// read: readErr), by appending header lines ("Name: value\r\n", with the
// Content-Type) to w.head and the body to w.body.
type fastHandler func(s *Server, req *fastHead, body []byte, readErr error, w *fastResp)

// fastResp is a 200 response being built; Date, Content-Length and
// Connection are added by the server.
type fastResp struct{ head, body []byte }

// fastConn is one connection the fast path serves.
type fastConn struct {
	c net.Conn
	// idle is set while the connection waits for a request's first
	// byte: shutdown closes only idle connections, as net/http does.
	idle atomic.Bool
}

// maxFastHead is the largest request head the fast path parses; a larger
// one goes to net/http, which applies MaxHeaderBytes.
const maxFastHead = 8 << 10

func (s *Server) newFastServer(slow *http.Server, route func(string) fastHandler) *fastServer {
	return &fastServer{
		s:            s,
		route:        route,
		slow:         slow,
		readTimeout:  slow.ReadTimeout,
		writeTimeout: slow.WriteTimeout,
		idleTimeout:  slow.IdleTimeout,
		conns:        map[*fastConn]struct{}{},
		next:         make(chan *fastConn),
		stop:         make(chan struct{}),
	}
}

// tcpRoute is the fast path of the loopback HTTP listener: Claude Code's
// http hook.
func tcpRoute(path string) fastHandler {
	if path == "/hook/claude" {
		return fastClaude
	}
	return nil
}

// unixRoute is the fast path of the Unix socket: the shim's hook calls,
// one per connection. Status and the exec endpoints go to net/http.
func unixRoute(path string) fastHandler {
	if name, ok := strings.CutPrefix(path, HookPath); ok && name != "" && !strings.Contains(name, "/") {
		return fastShim
	}
	return nil
}

// fastClaude is serveClaudeHTTP on the fast path.
func fastClaude(s *Server, req *fastHead, body []byte, readErr error, w *fastResp) {
	w.header("Content-Type", "application/json")
	w.body = s.claudeAnswer(req.query, body, readErr, w.body)
}

// fastShim is serveShim on the fast path.
func fastShim(s *Server, req *fastHead, body []byte, readErr error, w *fastResp) {
	w.body = s.shimAnswer(strings.TrimPrefix(req.path, HookPath), req.query, req.accept, body, readErr, w.header, w.body)
}

// header adds one header line to the response.
func (w *fastResp) header(k, v string) {
	w.head = append(append(append(append(w.head, k...), ": "...), v...), "\r\n"...)
}

// Serve accepts connections on ln until Shutdown.
func (f *fastServer) Serve(ln net.Listener) error {
	f.mu.Lock()
	f.ln = ln
	f.handoff = newChanListener(ln.Addr())
	f.mu.Unlock()
	slowDone := make(chan error, 1)
	go func() { slowDone <- f.slow.Serve(f.handoff) }()
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if f.closing.Load() {
				<-slowDone
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) || isTemporary(err) {
				// As net/http does: back off on EMFILE and the like.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			f.handoff.Close()
			<-slowDone
			return err
		}
		delay = 0
		fc := &fastConn{c: c}
		f.mu.Lock()
		if f.closing.Load() {
			f.mu.Unlock()
			c.Close()
			continue
		}
		f.conns[fc] = struct{}{}
		f.wg.Add(1)
		f.mu.Unlock()
		select {
		case f.next <- fc:
		default:
			go f.worker(fc)
		}
	}
}

// worker serves fc, then further connections Serve hands it, until none
// comes for workerIdle or Shutdown. A shim opens one connection per
// call: a goroutine per connection started each judge on a small stack
// that grew by copying, several times per call (5 % of the daemon's CPU
// in socket mode); a worker keeps its grown stack across connections.
func (f *fastServer) worker(fc *fastConn) {
	var idle *time.Timer
	for {
		f.serveConn(fc)
		if idle == nil {
			idle = time.NewTimer(workerIdle)
		} else {
			idle.Reset(workerIdle)
		}
		select {
		case fc = <-f.next:
			idle.Stop()
		case <-idle.C:
			return
		case <-f.stop:
			idle.Stop()
			return
		}
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// Shutdown stops accepting, closes idle connections, waits for requests
// in progress to be answered (or ctx), then shuts the net/http side down.
func (f *fastServer) Shutdown(ctx context.Context) error {
	f.closing.Store(true)
	f.stopOnce.Do(func() { close(f.stop) })
	f.mu.Lock()
	if f.ln != nil {
		f.ln.Close()
	}
	for fc := range f.conns {
		if fc.idle.Load() {
			// Wakes the wait for the next request; a request that
			// began meanwhile resets the deadline and is answered.
			fc.c.SetReadDeadline(aLongTimeAgo)
		}
	}
	f.mu.Unlock()
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	return errors.Join(err, f.slow.Shutdown(ctx))
}

var aLongTimeAgo = time.Unix(1, 0)

// readers are the connections' buffered readers, reused across
// connections (one per call on a socket, one per client kept alive).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, maxFastHead) }}

// bodyBufs hold request bodies while they are judged (Handle keeps no
// reference to the payload: decoding copies it), outBufs the handler's
// response body, respBufs the response as written.
var (
	bodyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}
	outBufs  = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}
	headBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}
	respBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}
)

// putBuf lends b (grown from *bp) back to pool, unless it grew too large
// to keep.
func putBuf(pool *sync.Pool, bp *[]byte, b []byte) {
	if cap(b) <= maxPooledRecord {
		*bp = b[:0]
		pool.Put(bp)
	}
}

func (f *fastServer) serveConn(fc *fastConn) {
	defer f.wg.Done()
	c := fc.c
	br := readers.Get().(*bufio.Reader)
	br.Reset(c)
	handed := false
	defer func() {
		f.mu.Lock()
		delete(f.conns, fc)
		f.mu.Unlock()
		if !handed {
			c.Close()
			br.Reset(nil)
			readers.Put(br)
		}
	}()
	defer func() {
		// As net/http does, a panic drops the connection, never the
		// daemon; Handle itself already turns an engine panic into a
		// blocking reply.
		if p := recover(); p != nil {
			f.s.log.Error("panic serving a hook connection", "panic", p)
		}
	}()
	pc, _ := c.(*peerConn)
	self := uint32(os.Getuid())
	first := true
	for {
		wait := f.idleTimeout
		if first {
			wait = f.readTimeout
		}
		// The deadline is set before the connection is marked idle,
		// so that Shutdown's wake-up (a deadline in the past) is never
		// overwritten by this one.
		c.SetReadDeadline(time.Now().Add(wait))
		fc.idle.Store(true)
		if f.closing.Load() {
			return
		}
		if _, err := br.Peek(1); err != nil {
			return
		}
		fc.idle.Store(false)
		now := time.Now()
		c.SetReadDeadline(now.Add(f.readTimeout))
		req, ok, err := readHead(br)
		if err != nil {
			return
		}
		var h fastHandler
		if ok {
			h = f.route(req.path)
		}
		if h != nil && pc != nil {
			if uid, err := pc.peer(); err != nil || uid != self {
				h = nil // net/http answers 403 and counts it
			}
		}
		if h == nil {
			handed = f.handOff(pc, c, br)
			return
		}
		br.Discard(req.headLen)
		c.SetWriteDeadline(now.Add(f.writeTimeout))
		bp := bodyBufs.Get().(*[]byte)
		body := (*bp)[:0]
		if cap(body) < req.length {
			body = make([]byte, req.length)
		}
		body = body[:req.length]
		_, rerr := readFull(br, body)
		hp, op := headBufs.Get().(*[]byte), outBufs.Get().(*[]byte)
		w := fastResp{head: (*hp)[:0], body: (*op)[:0]}
		if rerr != nil {
			// Cut off mid-body: the handler counts it and answers with
			// a block, as net/http's handlers do; the write likely
			// fails.
			req.close = true
		}
		h(f.s, &req, body, rerr, &w)
		putBuf(&bodyBufs, bp, body)
		rp := respBufs.Get().(*[]byte)
		resp := append((*rp)[:0], "HTTP/1.1 200 OK\r\n"...)
		resp = append(resp, w.head...)
		resp = appendResponseHead(resp, now, len(w.body), req.close)
		resp = append(resp, w.body...)
		putBuf(&headBufs, hp, w.head)
		putBuf(&outBufs, op, w.body)
		// One write: head and body in one segment.
		_, werr := c.Write(resp)
		putBuf(&respBufs, rp, resp)
		if werr != nil || req.close {
			return
		}
		first = false
	}
}

// readFull is io.ReadFull for a bufio.Reader.
func readFull(br *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := br.Read(b[n:])
		n += m
		if err != nil {
			if n == len(b) {
				return n, nil
			}
			return n, err
		}
	}
	return n, nil
}

// appendResponseHead ends a 200 response head with the headers net/http
// adds itself: Date, Content-Length, and Connection when it closes.
func appendResponseHead(b []byte, now time.Time, n int, close bool) []byte {
	b = append(b, "Date: "...)
	b = now.UTC().AppendFormat(b, http.TimeFormat)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(n), 10)
	if close {
		b = append(b, "\r\nConnection: close"...)
	}
	return append(b, "\r\n\r\n"...)
}

// handOff gives the connection, and what has been read from it, to the
// net/http server; it reports whether that server took it.
func (f *fastServer) handOff(pc *peerConn, c net.Conn, br *bufio.Reader) bool {
	c.SetReadDeadline(time.Time{})
	var hc net.Conn = &replayConn{Conn: c, r: br}
	if pc != nil {
		// samePeer finds the peer through the *peerConn; the uid was
		// looked up (or is looked up now) on the real socket.
		uid, err := pc.peer()
		np := &peerConn{Conn: &replayConn{Conn: pc.Conn, r: br}}
		np.once.Do(func() { np.uid, np.err = uid, err })
		hc = np
	}
	return f.handoff.give(hc)
}

// replayConn reads first what the fast path buffered, then the socket.
type replayConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *replayConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// socketOf returns the socket beneath a connection, handed over or not:
// code that reads the socket's own options (SO_PEERCRED, SO_PEERPIDFD)
// needs it.
func socketOf(c net.Conn) net.Conn {
	if rc, ok := c.(*replayConn); ok {
		return rc.Conn
	}
	return c
}

// chanListener is a net.Listener fed by handOff.
type chanListener struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *chanListener) give(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.closed:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// fastHead is a request head the fast path accepts.
type fastHead struct {
	path, query string
	// accept is the first Accept header's value, as r.Header.Get
	// returns it.
	accept  string
	length  int
	close   bool
	headLen int
}

// readHead waits for a complete request head in br, without consuming
// it, and parses it. ok is false when the fast path does not take the
// request (net/http then reads the same bytes). A read error (the client
// hung up, or was too slow: the read deadline) ends the connection, as
// net/http ends it without an answer on those.
func readHead(br *bufio.Reader) (h fastHead, ok bool, err error) {
	for {
		buf, _ := br.Peek(br.Buffered())
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			h, ok = parseHead(buf[:i+4])
			return h, ok, nil
		}
		if br.Buffered() >= br.Size() {
			return h, false, nil
		}
		if _, err := br.Peek(br.Buffered() + 1); err != nil {
			return h, false, err
		}
	}
}

// parseHead parses a request head ending in CRLF CRLF. It accepts only
// "POST target HTTP/1.1" with a plain path, a Host, one well-formed
// Content-Length of at most agent.MaxPayload, no Transfer-Encoding, no
// Expect, no Upgrade, and header lines net/http would accept unchanged.
func parseHead(head []byte) (h fastHead, ok bool) {
	h.headLen = len(head)
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	target, found := bytes.CutPrefix(line, []byte("POST "))
	if !found {
		return h, false
	}
	target, found = bytes.CutSuffix(target, []byte(" HTTP/1.1"))
	if !found || len(target) == 0 || target[0] != '/' {
		return h, false
	}
	for _, c := range target {
		// No escapes, fragments, spaces or controls: the path is then
		// exactly what net/http's mux would match.
		if c <= ' ' || c >= 0x7f || c == '%' || c == '#' {
			return h, false
		}
	}
	path, query, _ := bytes.Cut(target, []byte("?"))
	if bytes.Contains(path, []byte("//")) || bytes.Contains(path, []byte("/.")) {
		return h, false // net/http would clean and redirect
	}
	h.path, h.query = string(path), string(query)
	hosts, lengths, accepts := 0, 0, false
	h.length = -1
	for len(rest) > 2 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found || !validToken(name) || !validValue(value) {
			return h, false
		}
		value = bytes.Trim(value, " \t")
		switch {
		case asciiEqualFold(name, "host"):
			hosts++
			if !validHost(value) {
				return h, false
			}
		case asciiEqualFold(name, "content-length"):
			lengths++
			n, err := strconv.ParseUint(string(value), 10, 32)
			if err != nil || len(value) == 0 || value[0] == '+' || n > agent.MaxPayload {
				return h, false
			}
			h.length = int(n)
		case asciiEqualFold(name, "accept"):
			if !accepts {
				h.accept, accepts = string(value), true
			}
		case asciiEqualFold(name, "connection"):
			for tok := range bytes.SplitSeq(value, []byte(",")) {
				if asciiEqualFold(bytes.Trim(tok, " \t"), "close") {
					h.close = true
				}
			}
		case asciiEqualFold(name, "transfer-encoding"), asciiEqualFold(name, "expect"),
			asciiEqualFold(name, "upgrade"), asciiEqualFold(name, "trailer"):
			return h, false
		}
	}
	if hosts != 1 || lengths != 1 || h.length < 0 {
		return h, false
	}
	return h, true
}

// validToken reports an RFC 9110 token, as header names must be.
func validToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHost is net/http's check of a Host header (httpguts
// ValidHostHeader): it answers 400 to anything else.
func validHost(b []byte) bool {
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("!$%&'()*+,-.:;=[]_~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validValue rejects control bytes other than tab in a header value.
func validValue(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
