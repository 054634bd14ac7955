package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/rules"
)

// benchCalls is a small mix of calls: shell, file and unlabelled tools.
func benchCalls(b testing.TB) []rules.Call {
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

// corpusCalls turns the shared command corpus into Claude Bash calls in a
// workspace, falling back to benchCalls without the corpus.
func corpusCalls(b testing.TB) []rules.Call {
	f, err := os.Open("../testdata/corpus/commands.jsonl")
	if err != nil {
		return benchCalls(b)
	}
	defer f.Close()
	ws := b.TempDir()
	var calls []rules.Call
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Command == "" {
			continue
		}
		calls = append(calls, rules.Call{Agent: "claude", Event: "PreToolUse", Phase: rules.PreTool,
			Session: "bench", Cwd: ws, Workspaces: []string{ws}, Tool: "Bash",
			Input: map[string]any{"command": line.Command}})
	}
	if len(calls) == 0 {
		return benchCalls(b)
	}
	return calls
}

// BenchmarkJudgeInDaemon is the in-daemon decision over the command
// corpus: session lookup and the engine's verdict, without I/O. It
// reports the p50 and p99 of single decisions.
func BenchmarkJudgeInDaemon(b *testing.B) {
	d := startDaemon(b, nil)
	calls := corpusCalls(b)
	durs := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c := calls[i%len(calls)]
		t0 := time.Now()
		d.engine.Load().Judge(c, d.sessions.Get(c.Agent, c.Session))
		if len(durs) < cap(durs) {
			durs = append(durs, time.Since(t0))
		}
	}
	b.StopTimer()
	slices.Sort(durs)
	if n := len(durs); n > 0 {
		b.ReportMetric(float64(durs[n/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(durs[n*99/100].Nanoseconds()), "p99-ns")
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

// BenchmarkHandleShell is the load generator's pair of calls, handled
// inside the daemon: a read in the workspace and a delete of a home path,
// with decode, judging, the reply and the durable audit append.
func BenchmarkHandleShell(b *testing.B) {
	d := startDaemon(b, nil)
	ws := b.TempDir()
	var payloads [][]byte
	for _, cmd := range []string{"ls -la src", "rm -rf ~/x"} {
		p := claudePayload("PreToolUse", "b7", "Bash", map[string]any{"command": cmd})
		payloads = append(payloads, []byte(strings.Replace(string(p), `"cwd":"/tmp"`, `"cwd":"`+ws+`"`, 1)))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.Handle("claude", payloads[i%2], "bench", agent.Options{})
	}
}

// BenchmarkHTTPRoundTrip is Claude Code's http hook: a POST over loopback
// TCP with keep-alive, answered after the audit record is written, with
// the record fsynced after the answer (the default) and before it.
func BenchmarkHTTPRoundTrip(b *testing.B) {
	for _, mode := range []struct {
		name string
		sync time.Duration
	}{{"sync-after", 0}, {"sync-before", AuditSyncBeforeAnswer}} {
		b.Run(mode.name, func(b *testing.B) {
			d := startDaemon(b, func(c *Config) { c.AuditSyncWithin = mode.sync })
			p := mcpCall("b3")
			hc := &http.Client{}
			for b.Loop() {
				code, _, err := d.postClaude(hc, p)
				if err != nil || code != 200 {
					b.Fatal(code, err)
				}
			}
		})
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

// BenchmarkHandleParallel is decisions per second with many calls in
// flight: the audit log's group commit shares one write among them.
func BenchmarkHandleParallel(b *testing.B) {
	d := startDaemon(b, nil)
	p := mcpCall("b5")
	b.SetParallelism(64)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d.Handle("claude", p, "bench", agent.Options{})
		}
	})
}

// BenchmarkSocketParallel is sustained decisions per second over the Unix
// socket with 64 shim clients in flight, one connection per call, the
// mix of BenchmarkJudgeInDaemon's shell calls and an unlabelled MCP call.
// Client and daemon share the machine's cores.
func BenchmarkSocketParallel(b *testing.B) {
	d := startDaemon(b, nil)
	payloads := [][]byte{
		claudePayload("PreToolUse", "b6", "Bash", map[string]any{"command": "ls -la src"}),
		claudePayload("PreToolUse", "b6", "Bash", map[string]any{"command": "rm -rf ~/x"}),
		mcpCall("b6"),
	}
	b.SetParallelism(32) // × GOMAXPROCS (2 here) = 64 clients
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		c := d.client()
		i := int(n.Add(1))
		for pb.Next() {
			i++
			if _, err := c.Hook(context.Background(), "claude", payloads[i%len(payloads)], nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// BenchmarkNewEngine is the engine build the shim's in-process fallback
// pays on every call when the daemon is down.
func BenchmarkNewEngine(b *testing.B) {
	for b.Loop() {
		if _, err := NewEngine(EngineConfig{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHTTPParallel is decisions per second from 64 concurrent
// clients on the loopback HTTP hook with keep-alive connections, the shape
// of Claude Code's "type":"http" hooks: no process and no connection per
// call, the audit fsync shared by group commit.
func BenchmarkHTTPParallel(b *testing.B) {
	d := startDaemon(b, nil)
	payloads := [][]byte{
		claudePayload("PreToolUse", "b7", "Bash", map[string]any{"command": "ls -la src"}),
		claudePayload("PreToolUse", "b7", "Bash", map[string]any{"command": "rm -rf ~/x"}),
		mcpCall("b7"),
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	b.SetParallelism(32) // × GOMAXPROCS (2 here) = 64 clients
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		i := int(n.Add(1))
		for pb.Next() {
			i++
			code, _, err := d.postClaude(hc, payloads[i%len(payloads)])
			if err != nil || code != 200 {
				b.Error(code, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}
