package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// rawHTTP answers MCP over HTTP by hand with the given tools array.
func rawHTTP(tools string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result := `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
		if req.Method == "tools/list" {
			result = `{"tools":` + tools + `}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	})
}

func toolsJSON(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"tool_%05d","description":"one of many","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}}`, i)
	}
	return b.String() + "]"
}

// BenchmarkList lists servers over HTTP: a real-sized one (30 tools) and
// one with 10,000 tools, which is refused. The figures are the time and
// memory one listing costs the daemon.
func BenchmarkList(b *testing.B) {
	for _, n := range []int{30, 10000} {
		srv := httptest.NewServer(rawHTTP(toolsJSON(n)))
		s := Server{Name: "bench", Transport: HTTP, URL: srv.URL}
		l := &Lister{}
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tools, err := l.List(context.Background(), s)
				if n <= DefaultLimits.MaxTools && (err != nil || len(tools) != n) {
					b.Fatalf("%d tools, %v", len(tools), err)
				}
				if n > DefaultLimits.MaxTools && err == nil {
					b.Fatal("a server over the limit listed")
				}
			}
		})
		srv.Close()
	}
}
