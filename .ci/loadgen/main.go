// Command loadgen drives a running narrowd daemon with many concurrent
// clients and prints sustained decisions per second, latency, and the CPU
// the daemon spent per decision.
//
// Two shapes of client:
//   - -socket PATH: one new Unix connection per call, as each
//     `narrowd hook` process makes;
//   - -http URL: one keep-alive loopback TCP connection per client, as
//     Claude Code's "type":"http" hook keeps.
//
// With -pid, it reads the daemon's CPU time from /proc before and after,
// so the CPU cost per decision is printed beside the throughput: on a
// shared 2-core machine the load generator and other work take cores from
// the daemon, and CPU per decision is the figure that does not depend on
// them. .ci/bench-hook.sh runs it; it is not part of CI.
//
//	go run ./.ci/loadgen -socket PATH -c 64 -d 10s payload.json...
//	go run ./.ci/loadgen -http http://127.0.0.1:PORT/hook/claude -pid PID payload.json...
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narrowd/narrowd/daemon/hookclient"
)

// exchange writes one raw HTTP/1.1 request on a kept-alive connection and
// reads the reply: a lean client, so that the load generator's own CPU,
// on the same cores, skews the figure less than net/http's client would.
func exchange(conn net.Conn, r *bufio.Reader, req []byte) (status int, body []byte, err error) {
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(req); err != nil {
		return 0, nil, err
	}
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 {
		return 0, nil, fmt.Errorf("short status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		h, err := r.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		k, v, ok := bytes.Cut(h, []byte(":"))
		if ok && strings.EqualFold(string(k), "content-length") {
			length, err = strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				return 0, nil, fmt.Errorf("bad content-length %q", v)
			}
		}
	}
	if length < 0 {
		return 0, nil, errors.New("reply has no content-length")
	}
	body = make([]byte, length)
	_, err = io.ReadFull(r, body)
	return status, body, err
}

// client makes calls with the payloads until ctx ends and returns their
// latencies.
type client func(ctx context.Context, payloads [][]byte, first int, ok, failed *atomic.Int64) []time.Duration

// shimClient asks the daemon exactly as each `narrowd hook` process does,
// with hookclient.Ask: one new Unix connection per call.
func shimClient(socket, agentName string) client {
	return func(ctx context.Context, payloads [][]byte, first int, ok, failed *atomic.Int64) []time.Duration {
		var lat []time.Duration
		for n := first; ctx.Err() == nil; n++ {
			t0 := time.Now()
			_, err := hookclient.Ask(socket, t0.Add(10*time.Second), hookclient.Request{Agent: agentName, Payload: payloads[n%len(payloads)]})
			if err != nil {
				if failed.Add(1) == 1 {
					fmt.Fprintf(os.Stderr, "loadgen: first failure: %v\n", err)
				}
				continue
			}
			ok.Add(1)
			lat = append(lat, time.Since(t0))
		}
		return lat
	}
}

// httpClient keeps one loopback connection per client, as Claude Code's
// http hook does.
func httpClient(hookURL *url.URL) client {
	return func(ctx context.Context, payloads [][]byte, first int, ok, failed *atomic.Int64) []time.Duration {
		reqs := make([][]byte, len(payloads))
		for i, p := range payloads {
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
				hookURL.RequestURI(), hookURL.Host, len(p))
			reqs[i] = append([]byte(head), p...)
		}
		var lat []time.Duration
		var conn net.Conn
		var r *bufio.Reader
		defer func() {
			if conn != nil {
				conn.Close()
			}
		}()
		for n := first; ctx.Err() == nil; n++ {
			t0 := time.Now()
			if conn == nil {
				c, err := net.DialTimeout("tcp", hookURL.Host, 10*time.Second)
				if err != nil {
					failed.Add(1)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				conn, r = c, bufio.NewReader(c)
			}
			status, body, err := exchange(conn, r, reqs[n%len(reqs)])
			// An empty 200 is an answer: narrowd abstains at pre-tool
			// time for a call it would allow (the permission hook
			// answers it later).
			if err != nil || status != 200 {
				if failed.Add(1) == 1 {
					fmt.Fprintf(os.Stderr, "loadgen: first failure: status %d, err %v, body %.200s\n", status, err, body)
				}
				conn.Close()
				conn = nil
				continue
			}
			ok.Add(1)
			lat = append(lat, time.Since(t0))
		}
		return lat
	}
}

// cpuTicks is a process's user+system CPU time in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14, stime 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unreadable stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad stat")
	}
	return u + s, nil
}

// corpusPayloads turns every command of a corpus file into a Claude
// PreToolUse Bash payload: a load of distinct commands, where the two
// payload files repeat two.
func corpusPayloads(path, cwd string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for i, line := range bytes.Split(data, []byte("\n")) {
		var entry struct {
			Command string `json:"command"`
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := json.Unmarshal(line, &entry); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		if entry.Command == "" {
			continue
		}
		p, err := json.Marshal(map[string]any{
			"session_id": "bench", "cwd": cwd, "hook_event_name": "PreToolUse", "permission_mode": "default",
			"tool_name": "Bash", "tool_input": map[string]string{"command": entry.Command},
			"tool_use_id": fmt.Sprintf("toolu_corpus%d", i),
		})
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no commands", path)
	}
	return out, nil
}

// clockTick is USER_HZ, which Linux fixes at 100 for /proc.
const clockTick = 100

func main() {
	socket := flag.String("socket", "", "the daemon's socket (one connection per call)")
	hookURL := flag.String("http", "", "the daemon's http hook URL (keep-alive per client)")
	clients := flag.Int("c", 64, "concurrent clients")
	dur := flag.Duration("d", 10*time.Second, "how long to run")
	agentName := flag.String("agent", "claude", "agent the payloads are for (socket mode)")
	pid := flag.Int("pid", 0, "the daemon's pid, to report its CPU per decision")
	corpus := flag.String("corpus", "", "a command corpus (JSONL with a \"command\" per line): one Claude Bash payload per command, in -cwd")
	cwd := flag.String("cwd", "/tmp", "the working directory of the -corpus payloads")
	flag.Parse()
	if (*socket == "") == (*hookURL == "") || (flag.NArg() == 0) == (*corpus == "") {
		fmt.Fprintln(os.Stderr, "usage: loadgen (-socket PATH | -http URL) [-c N] [-d DURATION] [-pid PID] (PAYLOAD... | -corpus FILE [-cwd DIR])")
		os.Exit(2)
	}
	var payloads [][]byte
	if *corpus != "" {
		var err error
		if payloads, err = corpusPayloads(*corpus, *cwd); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
	}
	for _, p := range flag.Args() {
		b, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		payloads = append(payloads, b)
	}
	var run client
	mode := "shim (socket, connection per call)"
	if *socket != "" {
		run = shimClient(*socket, *agentName)
	} else {
		u, err := url.Parse(*hookURL)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(2)
		}
		run = httpClient(u)
		mode = "http (keep-alive)"
	}

	var before int64
	if *pid > 0 {
		var err error
		if before, err = cpuTicks(*pid); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen: daemon cpu:", err)
			os.Exit(1)
		}
	}
	var ok, failed atomic.Int64
	lat := make([][]time.Duration, *clients)
	ctx, cancel := context.WithTimeout(context.Background(), *dur)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for i := range *clients {
		wg.Go(func() { lat[i] = run(ctx, payloads, i, &ok, &failed) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p int) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[len(all)*p/100]
	}
	fmt.Printf("mode=%s clients=%d payloads=%d duration=%s decisions=%d errors=%d decisions/s=%.0f latency p50=%s p99=%s\n",
		mode, *clients, len(payloads), elapsed.Round(time.Millisecond), ok.Load(), failed.Load(),
		float64(ok.Load())/elapsed.Seconds(), pct(50).Round(time.Microsecond), pct(99).Round(time.Microsecond))
	if *pid > 0 && ok.Load() > 0 {
		after, err := cpuTicks(*pid)
		if err == nil {
			cpu := time.Duration(after-before) * time.Second / clockTick
			per := cpu / time.Duration(ok.Load())
			fmt.Printf("daemon cpu=%s per-decision=%s capacity-at-2-cores=%.0f decisions/s\n",
				cpu.Round(time.Millisecond), per.Round(100*time.Nanosecond), 2/per.Seconds())
		}
	}
	if failed.Load() > 0 {
		os.Exit(1)
	}
}
