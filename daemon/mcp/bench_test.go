package mcp

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/internal/mcptest"
)

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
		srv := httptest.NewServer(mcptest.RawServer(toolsJSON(n)))
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
