package daemon

import (
	"encoding/json"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/rules"
)

// hostileShapes are commands built to cost narrowd the most per byte:
// deep nests of every construct the parser nests, long pipelines and
// lists, and each just under and just over the analysis budget, up to
// the 4 MiB payload limit.
func hostileShapes() map[string]string {
	rep := strings.Repeat
	nest := func(open, mid, close string, n int) string { return rep(open, n) + mid + rep(close, n) }
	under := parse.MaxNesters/2 - 8
	shapes := map[string]string{
		"pipe-500k":          rep("a | ", 500_000) + "a",
		"list-1M":            rep("a;", 500_000),
		"subst-nest-30k":     nest("$(", "x", ")", 30_000),
		"quoted-subst-20k":   nest(`"$(echo `, "x", `)"`, 20_000),
		"paren-nest-100k":    nest("(", "x", ")", 100_000),
		"word-4M":            "echo " + rep("a", 4<<20-16),
		"heredoc-300k":       "cat > f <<'EOF'\n" + rep("some line of text\n", 16_000) + "EOF\nrm -rf ~/x\n",
		"subst-under":        nest("$(", "x", ")", under),
		"quoted-subst-under": nest(`"$(echo `, "x", `)"`, parse.MaxNesters/3-8),
		"paren-under":        nest("(", "x", ")", parse.MaxNesters-8),
		"brace-under":        nest("{ ", "x", ";}", parse.MaxNesters-8),
		"arith-under":        "echo $((" + nest("(", "1", ")", parse.MaxNesters-16) + "))",
		"param-under":        "echo " + nest("${x:-", "1", "}", parse.MaxNesters/2-8),
		"if-under":           nest("if a; then ", "x", "; fi", parse.MaxStatements/2-8),
		"pipe-under":         rep("cat f | ", parse.MaxNesters-8) + "cat f",
		"list-under":         rep("cat f;", parse.MaxStatements-8),
		"commands-under":     rep("ls a b c d e f g h i j k l m n o p\n", parse.MaxWords/17-1) + "rm -rf ~/x",
		"commands-over":      rep("ls a\n", parse.MaxCommands+1),
		"sh-c-nest":          nest(`sh -c "`, "ls", `"`, 64),
		"eval-nest":          nest("eval '", "ls", "'", 64),
		"loop-nest":          nest("for i in a b c d e f g h i j k l m n o p; do ", "cat $i", "; done", 16),
		"func-nest":          rep("f(){ g; }; ", 4000) + "f",
		"case-long":          "case x in " + rep("a) ls;; ", 8000) + "esac",
		"long-args":          "ls " + rep("a/b/c/d/e/f/g/h/i/j ", 100_000),
	}
	return shapes
}

// judgeHostile judges one shell command in a fresh workspace and returns
// the verdict, its encoded size and the CPU time and heap it took.
func judgeHostile(tb testing.TB, e *Engine, ws, cmd string) (rules.Verdict, int, time.Duration, uint64) {
	tb.Helper()
	call := rules.Call{Agent: "claude", Event: "PreToolUse", Phase: rules.PreTool, Session: "hostile",
		Cwd: ws, Workspaces: []string{ws}, Tool: "Bash", Input: map[string]any{"command": cmd}}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	v := e.Judge(call, rules.Session{})
	d := time.Since(t0)
	runtime.ReadMemStats(&m1)
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return v, len(b), d, m1.TotalAlloc - m0.TotalAlloc
}

// TestHostileCommandsBounded feeds the engine every hostile shape: none
// may crash it, allow, or produce a verdict over the audit budget.
// Time and memory are reported, not asserted (BenchmarkHostile and
// .ci/hostile.sh print figures).
func TestHostileCommandsBounded(t *testing.T) {
	e, err := NewEngine(EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	for name, cmd := range hostileShapes() {
		v, size, d, alloc := judgeHostile(t, e, ws, cmd)
		t.Logf("%-20s %8d bytes: %-5s %6d-byte verdict, %v, %d MiB allocated", name, len(cmd), v.Decision.Outcome, size, d.Round(time.Millisecond), alloc>>20)
		if v.Decision.Outcome == rules.Allow {
			t.Errorf("%s: allowed", name)
		}
		if size > 64<<10 {
			t.Errorf("%s: verdict of %d bytes, over 64 KiB", name, size)
		}
	}
}

// BenchmarkHostile is the cost of each hostile shape.
func BenchmarkHostile(b *testing.B) {
	e, err := NewEngine(EngineConfig{})
	if err != nil {
		b.Fatal(err)
	}
	ws := b.TempDir()
	for name, cmd := range hostileShapes() {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				judgeHostile(b, e, ws, cmd)
			}
		})
	}
}

// FuzzEngineHostile feeds the whole engine generated deep and long
// commands: a fragment repeated up to the payload limit, optionally
// closed by its mirror, around a dangerous tail. The engine must answer
// without crashing, never allow the tail, keep the verdict under the
// audit budget, and answer within a bound far above the budget's
// (100 ms of CPU), which catches any growth faster than the text.
func FuzzEngineHostile(f *testing.F) {
	for _, s := range []struct {
		open, close string
		n           uint32
	}{
		{"$(", ")", 30_000}, {`"$(echo `, `)"`, 20_000}, {"(", ")", 8000}, {"{ ", ";}", 8000},
		{"a | ", "", 500_000}, {"a;", "", 500_000}, {"if a; then ", "; fi", 8000},
		{"${x:-", "}", 4000}, {"sh -c '", "'", 64}, {"eval \"", "\"", 64}, {"ls a b c ", "", 4000},
		{"for i in a b; do ", "; done", 64}, {"$((", "))", 4000}, {"<(", ")", 4000}, {"`", "`", 20},
	} {
		f.Add(s.open, s.close, s.n)
	}
	e, err := NewEngine(EngineConfig{})
	if err != nil {
		f.Fatal(err)
	}
	ws := f.TempDir()
	f.Fuzz(func(t *testing.T, open, close string, n uint32) {
		if len(open)+len(close) == 0 {
			return
		}
		n = min(n, uint32(agent.MaxPayload/(len(open)+len(close)+1)))
		cmd := strings.Repeat(open, int(n)) + "rm -rf ~/x" + strings.Repeat(close, int(n))
		cpu0 := processCPU()
		v, size, _, _ := judgeHostile(t, e, ws, cmd)
		if d := processCPU() - cpu0; !raceEnabled && d > 2*time.Second {
			t.Errorf("%d bytes judged in %v of CPU", len(cmd), d)
		}
		if v.Decision.Outcome == rules.Allow {
			t.Errorf("allowed: %.200q", cmd)
		}
		if size > 64<<10 {
			t.Errorf("verdict of %d bytes for %d bytes of command", size, len(cmd))
		}
	})
}

// processCPU is the CPU time this process has used: unlike the wall
// clock, it does not grow when the machine is busy with others.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
