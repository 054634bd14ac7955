package daemon

import (
	"bufio"
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseHead holds the fast path to net/http: any request head the fast
// path takes, net/http reads too, with the same method, path, query,
// Content-Length, first Accept value and connection closing. A head the
// fast path misreads could route a call past the same-user check or the
// payload limit that net/http applies.
func FuzzParseHead(f *testing.F) {
	seeds := []string{
		"POST /hook/claude HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 12\r\n\r\n",
		"POST /v1/hook/codex?event=PreToolUse&interactive=false HTTP/1.1\r\nHost: narrowd\r\nContent-Type: application/json\r\nAccept: application/vnd.narrowd.reply+raw\r\nContent-Length: 7\r\nConnection: close\r\n\r\n",
		"POST /hook/claude?interactive=1 HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nConnection: keep-alive, Close\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost:x\r\nContent-Length: \t7 \r\nUser-Agent: a b\tc\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: a\r\nAccept: x\r\nAccept: y\r\nContent-Length: 1\r\n\r\n",
		"POST /hook/cl%61ude HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		i := bytes.Index(head, []byte("\r\n\r\n"))
		if i < 0 {
			return
		}
		head = head[:i+4]
		h, ok := parseHead(head)
		if !ok {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			t.Fatalf("fast path takes %q, net/http refuses it: %v", head, err)
		}
		if r.Method != http.MethodPost || r.URL.Path != h.path || r.URL.RawQuery != h.query {
			t.Fatalf("%q: fast path %s?%s, net/http %s %s?%s", head, h.path, h.query, r.Method, r.URL.Path, r.URL.RawQuery)
		}
		if r.ContentLength != int64(h.length) {
			t.Fatalf("%q: fast path length %d, net/http %d", head, h.length, r.ContentLength)
		}
		if got := r.Header.Get("Accept"); got != h.accept {
			t.Fatalf("%q: fast path accept %q, net/http %q", head, h.accept, got)
		}
		if r.Close != h.close {
			t.Fatalf("%q: fast path close %v, net/http %v", head, h.close, r.Close)
		}
		if len(r.TransferEncoding) > 0 || r.Header.Get("Expect") != "" {
			t.Fatalf("%q: fast path takes a request with a transfer coding or Expect", head)
		}
		if n, err := strconv.Atoi(strings.TrimSpace(r.Header.Get("Content-Length"))); err != nil || n != h.length {
			t.Fatalf("%q: Content-Length header %q", head, r.Header.Get("Content-Length"))
		}
	})
}
