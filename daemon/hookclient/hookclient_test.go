package hookclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// raw builds a response as the daemon sends it.
func raw(status, headers, body string) string {
	return "HTTP/1.1 " + status + "\r\n" + headers + "\r\n" + body
}

var decodeCases = []struct {
	name     string
	resp     string
	want     Reply
	unusable bool
	cut      bool
}{
	{name: "raw allow", resp: raw("200 OK", "Content-Type: "+RawReplyType+"\r\nContent-Length: 0\r\nNarrowd-Exit-Code: 0\r\nNarrowd-Stdout-Length: 0\r\n", ""),
		want: Reply{Stdout: []byte{}, Stderr: []byte{}}},
	{name: "raw block", resp: raw("200 OK", "content-type: "+RawReplyType+"\r\ncontent-length: 8\r\nnarrowd-exit-code: 2\r\nnarrowd-stdout-length: 4\r\nNarrowd-Id: ab12\r\n", "{}\r\nno\n\n"),
		want: Reply{Stdout: []byte("{}\r\n"), Stderr: []byte("no\n\n"), ExitCode: 2, ID: "ab12"}},
	{name: "json envelope", resp: raw("200 OK", "Content-Type: "+ReplyType+"\r\nContent-Length: 2\r\n", "{}"),
		want: Reply{JSON: []byte("{}")}},
	{name: "exit 1 lets calls run", resp: raw("200 OK", "Content-Type: "+RawReplyType+"\r\nContent-Length: 0\r\nNarrowd-Exit-Code: 1\r\nNarrowd-Stdout-Length: 0\r\n", ""), unusable: true},
	{name: "no exit code", resp: raw("200 OK", "Content-Type: "+RawReplyType+"\r\nContent-Length: 0\r\nNarrowd-Stdout-Length: 0\r\n", ""), unusable: true},
	{name: "no stdout length", resp: raw("200 OK", "Content-Type: "+RawReplyType+"\r\nContent-Length: 0\r\nNarrowd-Exit-Code: 0\r\n", ""), unusable: true},
	{name: "stdout longer than body", resp: raw("200 OK", "Content-Type: "+RawReplyType+"\r\nContent-Length: 1\r\nNarrowd-Exit-Code: 0\r\nNarrowd-Stdout-Length: 2\r\n", "x"), unusable: true},
	{name: "negative length", resp: raw("200 OK", "Content-Type: "+RawReplyType+"\r\nContent-Length: -1\r\nNarrowd-Exit-Code: 0\r\nNarrowd-Stdout-Length: 0\r\n", ""), unusable: true},
	{name: "bad exit code", resp: raw("200 OK", "Content-Type: "+RawReplyType+"\r\nContent-Length: 0\r\nNarrowd-Exit-Code: two\r\nNarrowd-Stdout-Length: 0\r\n", ""), unusable: true},
	{name: "forbidden", resp: raw("403 Forbidden", "Content-Length: 0\r\n", ""), unusable: true},
	{name: "not http", resp: "SSH-2.0-OpenSSH\r\n\r\n", unusable: true},
	{name: "chunked", resp: raw("200 OK", "Content-Type: "+RawReplyType+"\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"), unusable: true},
	{name: "no content length", resp: raw("200 OK", "Content-Type: "+RawReplyType+"\r\nNarrowd-Exit-Code: 0\r\nNarrowd-Stdout-Length: 0\r\n", ""), unusable: true},
	{name: "other type", resp: raw("200 OK", "Content-Type: text/plain\r\nContent-Length: 2\r\n", "ok"), unusable: true},
	{name: "trailing bytes", resp: raw("200 OK", "Content-Type: "+RawReplyType+"\r\nContent-Length: 0\r\nNarrowd-Exit-Code: 0\r\nNarrowd-Stdout-Length: 0\r\n", "x"), unusable: true},
	{name: "cut in the body", resp: raw("200 OK", "Content-Type: "+RawReplyType+"\r\nContent-Length: 10\r\nNarrowd-Exit-Code: 2\r\nNarrowd-Stdout-Length: 2\r\n", "{}"), cut: true},
	{name: "cut in the head", resp: "HTTP/1.1 200 OK\r\nContent-Ty", cut: true},
	{name: "nothing", resp: "", cut: true},
}

func TestDecode(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.resp))
			var unusable *UnusableError
			switch {
			case tc.unusable:
				if !errors.As(err, &unusable) || errors.Is(err, ErrUnreachable) {
					t.Fatalf("Decode = %+v, %v; want an UnusableError", got, err)
				}
			case tc.cut:
				if !errors.Is(err, ErrUnreachable) {
					t.Fatalf("Decode = %+v, %v; want ErrUnreachable", got, err)
				}
			case err != nil:
				t.Fatalf("Decode: %v", err)
			default:
				if string(got.Stdout) != string(tc.want.Stdout) || string(got.Stderr) != string(tc.want.Stderr) ||
					got.ExitCode != tc.want.ExitCode || got.ID != tc.want.ID || string(got.JSON) != string(tc.want.JSON) {
					t.Fatalf("Decode = %+v, want %+v", got, tc.want)
				}
			}
		})
	}
}

// FuzzDecode: whatever comes back on the socket, a reply the shim would
// act on blocks or allows only as narrowd does, and is the body exactly.
func FuzzDecode(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.resp))
	}
	f.Fuzz(func(t *testing.T, resp []byte) {
		r, err := Decode(resp)
		if err != nil {
			var unusable *UnusableError
			if !errors.As(err, &unusable) && !errors.Is(err, ErrUnreachable) {
				t.Fatalf("Decode error %v is neither unusable nor unreachable", err)
			}
			return
		}
		if r.JSON != nil {
			return
		}
		if r.ExitCode != 0 && r.ExitCode != 2 {
			t.Fatalf("exit code %d accepted", r.ExitCode)
		}
		if !strings.HasSuffix(string(resp), string(r.Stdout)+string(r.Stderr)) {
			t.Fatalf("reply %q/%q is not the body of %q", r.Stdout, r.Stderr, resp)
		}
	})
}

func TestEncode(t *testing.T) {
	yes := true
	got := string(Encode(Request{Agent: "co pilot/..", Event: "permissionRequest&x=1", Interactive: &yes, Payload: []byte(`{"a":1}`)}))
	want := "POST /v1/hook/co%20pilot%2F.. HTTP/1.1\r\nHost: narrowd\r\nContent-Type: application/json\r\nAccept: " + RawReplyType +
		"\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{\"a\":1}"
	if strings.Replace(got, "?event=permissionRequest%26x%3D1&interactive=true", "", 1) != want {
		t.Fatalf("Encode =\n%q\nwant (with the query)\n%q", got, want)
	}
	if !strings.Contains(got, "/v1/hook/co%20pilot%2F..?event=permissionRequest%26x%3D1&interactive=true HTTP/1.1") {
		t.Fatalf("Encode target wrong: %q", got)
	}
}

// serve answers on a real Unix socket with handler.
func serve(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

func TestAsk(t *testing.T) {
	var got *http.Request
	var body string
	sock := serve(t, func(w http.ResponseWriter, r *http.Request) {
		got = r
		b := make([]byte, r.ContentLength)
		r.Body.Read(b)
		body = string(b)
		w.Header().Set("Content-Type", RawReplyType)
		w.Header().Set(ExitCodeHeader, "2")
		w.Header().Set(StdoutLengthHeader, "3")
		w.Header().Set("Content-Length", "7")
		w.Write([]byte("out" + "err!"))
	})
	no := false
	r, err := Ask(sock, time.Now().Add(5*time.Second), Request{Agent: "codex", Event: "PreToolUse", Interactive: &no, Payload: []byte(`{"x":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Stdout) != "out" || string(r.Stderr) != "err!" || r.ExitCode != 2 {
		t.Fatalf("Ask = %+v", r)
	}
	if got.URL.Path != HookPath+"codex" || got.URL.Query().Get("event") != "PreToolUse" || got.URL.Query().Get("interactive") != "false" ||
		got.Header.Get("Accept") != RawReplyType || body != `{"x":1}` {
		t.Fatalf("daemon saw %s %v %q", got.URL, got.Header, body)
	}
}

func TestAskUnreachable(t *testing.T) {
	dir := t.TempDir()
	// A socket file nobody listens on, as a crashed daemon leaves.
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	hangup, frozen := badDaemons(t, dir)

	for _, sock := range []string{filepath.Join(dir, "absent.sock"), stale, hangup, frozen, os.DevNull} {
		_, err := Ask(sock, time.Now().Add(300*time.Millisecond), Request{Agent: "claude", Payload: []byte("{}")})
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("%s: Ask error %v, want ErrUnreachable", filepath.Base(sock), err)
		}
	}
}

// TestPost answers from a real net/http server, as the daemon's ticket
// handlers do: a small body gets a Content-Length, a long one or one
// flushed early comes chunked, and either way Post returns the status
// and the whole body.
func TestPost(t *testing.T) {
	long := strings.Repeat("x", 10000)
	type seen struct{ method, path, ctype, body string }
	got := make(chan seen, 1)
	sock := serve(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, r.Header.Get("Content-Type"), string(b)}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/small":
			w.Write([]byte(`{"ok":1}`))
		case "/long":
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(long))
		case "/flushed":
			w.Write([]byte("a"))
			w.(http.Flusher).Flush()
			w.Write([]byte("bc"))
		}
	})
	for _, tc := range []struct {
		path, status string
		body         string
	}{
		{"/small", "200 OK", `{"ok":1}`},
		{"/long", "403 Forbidden", long},
		{"/flushed", "200 OK", "abc"},
	} {
		r, err := Post(context.Background(), sock, time.Now().Add(5*time.Second), tc.path, []byte(`{"ticket":"t"}`))
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if r.Status != tc.status || strconv.Itoa(r.StatusCode) != tc.status[:3] || string(r.Body) != tc.body {
			t.Errorf("%s: Post = %q %d, %d body bytes; want %q, %d", tc.path, r.Status, r.StatusCode, len(r.Body), tc.status, len(tc.body))
		}
		if s := <-got; s != (seen{"POST", tc.path, "application/json", `{"ticket":"t"}`}) {
			t.Errorf("%s: the server saw %+v", tc.path, s)
		}
	}
}

// TestPostUnreachable: no daemon, one that hangs up, one that never
// answers (until the deadline, or until the context is cancelled).
func TestPostUnreachable(t *testing.T) {
	dir := t.TempDir()
	hangup, frozen := badDaemons(t, dir)
	for _, sock := range []string{filepath.Join(dir, "absent.sock"), hangup, frozen} {
		_, err := Post(context.Background(), sock, time.Now().Add(300*time.Millisecond), "/x", []byte("{}"))
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("%s: Post error %v, want ErrUnreachable", filepath.Base(sock), err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := Post(ctx, frozen, time.Now().Add(time.Hour), "/x", []byte("{}"))
	if !errors.Is(err, ErrUnreachable) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: Post error %v, want ErrUnreachable and context.Canceled", err)
	}
}

// decodeResponseCases are answers to a Post, as the daemon sends them and
// as it must not.
var decodeResponseCases = []struct {
	name, resp string
	body       string
	unusable   bool
	cut        bool
}{
	{name: "length", resp: raw("403 Forbidden", "Content-Length: 3\r\n", "abc"), body: "abc"},
	{name: "chunked", resp: raw("200 OK", "Transfer-Encoding: chunked\r\n", "2;x=y\r\nab\r\nA\r\n0123456789\r\n0\r\nTrailer: 1\r\n\r\n"), body: "ab0123456789"},
	{name: "no status text", resp: raw("500", "Content-Length: 0\r\n", ""), body: ""},
	{name: "not http", resp: "SSH-2.0-OpenSSH\r\n\r\n", unusable: true},
	{name: "bad code", resp: raw("2000 OK", "Content-Length: 0\r\n", ""), unusable: true},
	{name: "no length", resp: raw("200 OK", "", "x"), unusable: true},
	{name: "gzip", resp: raw("200 OK", "Transfer-Encoding: gzip\r\n", "x"), unusable: true},
	{name: "bad chunk size", resp: raw("200 OK", "Transfer-Encoding: chunked\r\n", "zz\r\nab\r\n0\r\n\r\n"), unusable: true},
	{name: "chunk longer than its size", resp: raw("200 OK", "Transfer-Encoding: chunked\r\n", "1\r\nab\r\n0\r\n\r\n"), unusable: true},
	{name: "trailing bytes", resp: raw("200 OK", "Content-Length: 0\r\n", "x"), unusable: true},
	{name: "cut in the chunks", resp: raw("200 OK", "Transfer-Encoding: chunked\r\n", "5\r\nab"), cut: true},
	{name: "no last chunk", resp: raw("200 OK", "Transfer-Encoding: chunked\r\n", "2\r\nab\r\n"), cut: true},
	{name: "cut in the body", resp: raw("200 OK", "Content-Length: 5\r\n", "ab"), cut: true},
	{name: "nothing", resp: "", cut: true},
}

func TestDecodeResponse(t *testing.T) {
	for _, tc := range decodeResponseCases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeResponse([]byte(tc.resp))
			var unusable *UnusableError
			switch {
			case tc.unusable:
				if !errors.As(err, &unusable) || errors.Is(err, ErrUnreachable) {
					t.Fatalf("DecodeResponse = %+v, %v; want an UnusableError", r, err)
				}
			case tc.cut:
				if !errors.Is(err, ErrUnreachable) {
					t.Fatalf("DecodeResponse = %+v, %v; want ErrUnreachable", r, err)
				}
			case err != nil || string(r.Body) != tc.body:
				t.Fatalf("DecodeResponse = %+v, %v; want body %q", r, err, tc.body)
			}
		})
	}
}

// badDaemons listens on two sockets in dir until the test ends: one that
// hangs up on every connection before answering, and one that never
// answers.
func badDaemons(t *testing.T, dir string) (hangup, frozen string) {
	t.Helper()
	hangup = filepath.Join(dir, "hangup.sock")
	hl, err := net.Listen("unix", hangup)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hl.Close() })
	go func() {
		for {
			c, err := hl.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	frozen = filepath.Join(dir, "frozen.sock")
	fl, err := net.Listen("unix", frozen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fl.Close() })
	return hangup, frozen
}

// FuzzDecodeResponse holds DecodeResponse to net/http: a response both
// take, they read with the same status and body; whatever DecodeResponse
// does not take is an error that says unusable or unreachable. (It takes
// some responses net/http refuses, a version "HTTP/1." or a header line
// without a colon: the daemon sends neither, and a refusal or a wrong
// body still fails the exec safe.)
func FuzzDecodeResponse(f *testing.F) {
	for _, tc := range decodeResponseCases {
		f.Add([]byte(tc.resp))
	}
	f.Fuzz(func(t *testing.T, resp []byte) {
		r, err := DecodeResponse(resp)
		if err != nil {
			var unusable *UnusableError
			if !errors.As(err, &unusable) && !errors.Is(err, ErrUnreachable) {
				t.Fatalf("DecodeResponse error %v is neither unusable nor unreachable", err)
			}
			return
		}
		hr, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(resp)), nil)
		if err != nil {
			return
		}
		body, err := io.ReadAll(hr.Body)
		if err != nil {
			return
		}
		if hr.StatusCode != r.StatusCode || !bytes.Equal(body, r.Body) {
			t.Fatalf("%q: DecodeResponse gives %d %q, net/http %d %q", resp, r.StatusCode, r.Body, hr.StatusCode, body)
		}
	})
}
