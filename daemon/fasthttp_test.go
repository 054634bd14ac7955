package daemon

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/daemon/hookclient"
)

func TestParseHead(t *testing.T) {
	const ok = "POST /hook/claude HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 12\r\n\r\n"
	tests := []struct {
		name   string
		head   string
		take   bool
		path   string
		query  string
		length int
		close  bool
	}{
		{"plain", ok, true, "/hook/claude", "", 12, false},
		{"query and close", "POST /hook/claude?interactive=1 HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nConnection: keep-alive, Close\r\n\r\n", true, "/hook/claude", "interactive=1", 0, true},
		{"value whitespace", "POST /a HTTP/1.1\r\nHost:x\r\nContent-Length: \t7 \r\nUser-Agent: a b\tc\r\n\r\n", true, "/a", "", 7, false},
		{"get", strings.Replace(ok, "POST", "GET", 1), false, "", "", 0, false},
		{"http/1.0", strings.Replace(ok, "HTTP/1.1", "HTTP/1.0", 1), false, "", "", 0, false},
		{"escaped path", strings.Replace(ok, "/hook/claude", "/hook/cl%61ude", 1), false, "", "", 0, false},
		{"unclean path", strings.Replace(ok, "/hook/claude", "/hook//claude", 1), false, "", "", 0, false},
		{"dot segment", strings.Replace(ok, "/hook/claude", "/x/../hook/claude", 1), false, "", "", 0, false},
		{"absolute form", strings.Replace(ok, "/hook/claude", "http://x/hook/claude", 1), false, "", "", 0, false},
		{"double space", strings.Replace(ok, "POST ", "POST  ", 1), false, "", "", 0, false},
		{"no host", "POST /a HTTP/1.1\r\nContent-Length: 1\r\n\r\n", false, "", "", 0, false},
		{"two hosts", "POST /a HTTP/1.1\r\nHost: a\r\nHost: a\r\nContent-Length: 1\r\n\r\n", false, "", "", 0, false},
		{"bad host", "POST /a HTTP/1.1\r\nHost: a b\r\nContent-Length: 1\r\n\r\n", false, "", "", 0, false},
		{"no length", "POST /a HTTP/1.1\r\nHost: a\r\n\r\n", false, "", "", 0, false},
		{"two lengths", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", false, "", "", 0, false},
		{"signed length", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n", false, "", "", 0, false},
		{"empty length", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", false, "", "", 0, false},
		{"length over the payload limit", fmt.Sprintf("POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n", agent.MaxPayload+1), false, "", "", 0, false},
		{"chunked", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", false, "", "", 0, false},
		{"expect", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\n", false, "", "", 0, false},
		{"upgrade", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nUpgrade: h2c\r\n\r\n", false, "", "", 0, false},
		{"space before colon", "POST /a HTTP/1.1\r\nHost : a\r\nContent-Length: 1\r\n\r\n", false, "", "", 0, false},
		{"folded line", "POST /a HTTP/1.1\r\nHost: a\r\n b\r\nContent-Length: 1\r\n\r\n", false, "", "", 0, false},
		{"control in value", "POST /a HTTP/1.1\r\nHost: a\r\nX: a\x01\r\nContent-Length: 1\r\n\r\n", false, "", "", 0, false},
		{"bare lf", "POST /a HTTP/1.1\nHost: a\r\nContent-Length: 1\r\n\r\n", false, "", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, take := parseHead([]byte(tt.head))
			if take != tt.take {
				t.Fatalf("take = %v, want %v", take, tt.take)
			}
			if !take {
				return
			}
			if h.path != tt.path || h.query != tt.query || h.length != tt.length || h.close != tt.close || h.headLen != len(tt.head) {
				t.Fatalf("got %+v", h)
			}
		})
	}
}

// rawExchange writes req on a fresh TCP connection to the daemon's http
// listener and reads n responses.
func rawExchange(t *testing.T, d *testDaemon, req string, n int) []*http.Response {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(d.httpURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var out []*http.Response
	for range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", len(out)+1, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		out = append(out, resp)
	}
	return out
}

func post(target, payload string, headers ...string) string {
	return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + strings.Join(headers, "") +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(payload)) + payload
}

func chunked(target, payload string) string {
	return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(payload), payload)
}

// TestFastPathAndHandOff checks that requests the fast path takes and
// those it hands to net/http get the same answers, including on one
// kept-alive connection that switches from one to the other.
func TestFastPathAndHandOff(t *testing.T) {
	d := startDaemon(t, nil)
	ls := string(claudePayload("PreToolUse", "f1", "Bash", map[string]any{"command": "ls"}))
	rm := string(claudePayload("PreToolUse", "f1", "Bash", map[string]any{"command": "rm -rf ~/x"}))

	decision := func(r *http.Response) string {
		t.Helper()
		if r.StatusCode != 200 {
			t.Fatalf("status %d", r.StatusCode)
		}
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}

	fast := rawExchange(t, d, post("/hook/claude", rm)+post("/hook/claude", ls), 2)
	slow := rawExchange(t, d, chunked("/hook/claude", rm)+chunked("/hook/claude", ls), 2)
	mixed := rawExchange(t, d, post("/hook/claude", rm)+chunked("/hook/claude", rm)+post("/hook/claude", ls), 3)
	for i, pair := range [][2]string{
		{decision(fast[0]), decision(slow[0])},
		{decision(fast[1]), decision(slow[1])},
	} {
		if pair[0] != pair[1] {
			t.Errorf("call %d: fast path %q, net/http %q", i, pair[0], pair[1])
		}
	}
	if !isBlocking(agent.Reply{Stdout: []byte(decision(mixed[0]))}) || !isBlocking(agent.Reply{Stdout: []byte(decision(mixed[1]))}) {
		t.Errorf("rm -rf ~/x not blocked on a mixed connection")
	}
	if fast[0].Header.Get("Content-Type") != "application/json" || fast[0].ContentLength <= 0 {
		t.Errorf("fast path headers %v", fast[0].Header)
	}

	// What the fast path does not take, net/http answers.
	for _, tt := range []struct {
		req  string
		code int
	}{
		{"GET /hook/claude HTTP/1.1\r\nHost: x\r\n\r\n", 405},
		{post("/hook/other", ls), 404},
		{"POST /hook/claude HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 400},
		{post("/hook/claude", ls, "Expect: 100-continue\r\n"), 100},
	} {
		if r := rawExchange(t, d, tt.req, 1)[0]; r.StatusCode != tt.code {
			t.Errorf("%q: status %d, want %d", tt.req, r.StatusCode, tt.code)
		}
	}

	// Connection: close is honoured.
	c, err := net.Dial("tcp", strings.TrimPrefix(d.httpURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, post("/hook/claude", ls, "Connection: close\r\n"))
	all, err := io.ReadAll(c) // ends only when the daemon closes
	if err != nil || !bytes.Contains(all, []byte("Connection: close")) {
		t.Fatalf("connection close: %v %q", err, all)
	}

	// Every answered call, fast or not, is audited.
	if n := len(auditIDs(t, d.cfg.AuditDir)); n < 8 {
		t.Errorf("%d audit records, want at least 8", n)
	}
}

// TestFastPathShutdownAnswersInFlight is TestGracefulShutdownAnswersInFlight
// on the http listener's fast path, with an idle kept-alive connection
// beside it that shutdown must not wait for.
func TestFastPathShutdownAnswersInFlight(t *testing.T) {
	d := startDaemon(t, nil)
	addr := strings.TrimPrefix(d.httpURL, "http://")
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	payload := string(mcpCall("inflight"))
	idle.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(idle, post("/hook/claude", payload))
	if _, err := http.ReadResponse(bufio.NewReader(idle), nil); err != nil {
		t.Fatal(err)
	}

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := post("/hook/claude", payload)
	cut := len(req) - len(payload) + 10
	io.WriteString(conn, req[:cut])
	time.Sleep(100 * time.Millisecond)
	d.cancel()
	time.Sleep(200 * time.Millisecond)
	io.WriteString(conn, req[cut:])
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("in-flight call not answered: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !isBlocking(agent.Reply{Stdout: body}) {
		t.Fatalf("reply %s", body)
	}
	d.waitStopped(t)
}

// TestFastShimMatchesNetHTTP sends the shim's request over the Unix
// socket as the shim does (fast path) and chunked (handed to net/http),
// with and without the raw reply type: both answers decode to the same
// reply.
func TestFastShimMatchesNetHTTP(t *testing.T) {
	d := startDaemon(t, nil)
	payload := string(claudePayload("PreToolUse", "f2", "Bash", map[string]any{"command": "rm -rf ~/x"}))
	exchange := func(req string) hookclient.Reply {
		t.Helper()
		c, err := net.Dial("unix", d.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, req)
		resp, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		r, err := hookclient.Decode(resp)
		if err != nil {
			t.Fatalf("%v: %q", err, resp)
		}
		if r.JSON != nil {
			var env Envelope
			if err := json.Unmarshal(r.JSON, &env); err != nil {
				t.Fatal(err)
			}
			r = hookclient.Reply{Stdout: env.Stdout, Stderr: []byte(env.Stderr), ExitCode: env.ExitCode, ID: env.ID}
		}
		if r.ID == "" {
			t.Fatalf("no audit id: %q", resp)
		}
		r.ID = ""
		return r
	}
	target := hookclient.HookPath + "claude?interactive=false"
	for _, accept := range []string{"", "Accept: " + hookclient.RawReplyType + "\r\n"} {
		fast := exchange(post(target, payload, accept, "Connection: close\r\n"))
		slow := exchange(strings.Replace(chunked(target, payload), "\r\n\r\n", "\r\n"+accept+"Connection: close\r\n\r\n", 1))
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("accept %q: fast path %+v, net/http %+v", accept, fast, slow)
		}
		if fast.ExitCode != 2 && !isBlocking(agent.Reply{Stdout: fast.Stdout}) {
			t.Errorf("accept %q: rm -rf ~/x not blocked: %+v", accept, fast)
		}
	}
}
