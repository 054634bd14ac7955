package daemon

import (
	"context"
	"net/http"
	"testing"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/rules"
)

// benchCalls is a small mix of calls: shell, file and unlabelled tools.
func benchCalls(b *testing.B) []rules.Call {
	payloads := [][]byte{
		claudePayload("PreToolUse", "b1", "Bash", map[string]any{"command": "ls -la"}),
		claudePayload("PreToolUse", "b1", "Bash", map[string]any{"command": "git status && go test ./..."}),
		claudePayload("PreToolUse", "b1", "Read", map[string]any{"file_path": "/tmp/x/README.md"}),
		claudePayload("PreToolUse", "b1", "Edit", map[string]any{"file_path": "/tmp/x/main.go", "old_string": "a", "new_string": "b"}),
		claudePayload("PreToolUse", "b1", "Bash", map[string]any{"command": "rm -rf ../outside"}),
		mcpCall("b1"),
	}
	var calls []rules.Call
	for _, p := range payloads {
		c, err := agent.Decode("claude", bytesReader(p))
		if err != nil {
			b.Fatal(err)
		}
		calls = append(calls, c)
	}
	return calls
}

// BenchmarkJudgeInDaemon is the in-daemon decision: session lookup and
// the engine's verdict, without I/O.
func BenchmarkJudgeInDaemon(b *testing.B) {
	d := startDaemon(b, nil)
	calls := benchCalls(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c := calls[i%len(calls)]
		d.engine.Load().Judge(c, d.sessions.Get(c.Agent, c.Session))
	}
}

// BenchmarkHandle is one whole decision inside the daemon: decode, judge,
// encode, and the durable audit append (write + fsync).
func BenchmarkHandle(b *testing.B) {
	d := startDaemon(b, nil)
	p := mcpCall("b2")
	b.ReportAllocs()
	for b.Loop() {
		d.Handle("claude", p, "bench", agent.Options{})
	}
}

// BenchmarkHTTPRoundTrip is Claude Code's http hook: a POST over loopback
// TCP with keep-alive, answered after the audit record is on disk.
func BenchmarkHTTPRoundTrip(b *testing.B) {
	d := startDaemon(b, nil)
	p := mcpCall("b3")
	hc := &http.Client{}
	for b.Loop() {
		code, _, err := d.postClaude(hc, p)
		if err != nil || code != 200 {
			b.Fatal(code, err)
		}
	}
}

// BenchmarkSocketRoundTrip is the shim's exchange with the daemon over the
// Unix socket (one connection per call, as each shim process makes).
func BenchmarkSocketRoundTrip(b *testing.B) {
	d := startDaemon(b, nil)
	p := mcpCall("b4")
	c := d.client()
	for b.Loop() {
		if _, err := c.Hook(context.Background(), "claude", p, nil); err != nil {
			b.Fatal(err)
		}
	}
}
