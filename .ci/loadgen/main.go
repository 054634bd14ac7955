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

	"github.com/narrowd/narrowd/daemon"
	"github.com/narrowd/narrowd/daemon/hookclient"
)

// exchange writes one raw HTTP/1.1 request and reads the reply: a lean
// client, so that the load generator's own CPU, on the same cores, skews
// the figure less than net/http's client would.
func exchange(conn net.Conn, r *bufio.Reader, req []byte) (status int, body []byte, err error) {
	status, _, body, err = exchangeExit(conn, r, req)
	return status, body, err
}

// exchangeExit is exchange that also returns a raw reply's exit code
// header (hookclient.ExitCodeHeader), or -1 when the reply has none.
func exchangeExit(conn net.Conn, r *bufio.Reader, req []byte) (status, exit int, body []byte, err error) {
	exit = -1
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(req); err != nil {
		return 0, -1, nil, err
	}
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, -1, nil, err
	}
	if len(line) < 12 {
		return 0, -1, nil, fmt.Errorf("short status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, -1, nil, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		h, err := r.ReadSlice('\n')
		if err != nil {
			return 0, -1, nil, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		k, v, ok := bytes.Cut(h, []byte(":"))
		if ok && strings.EqualFold(string(k), hookclient.ExitCodeHeader) {
			if exit, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return 0, -1, nil, fmt.Errorf("bad exit code %q", v)
			}
		}
		if ok && strings.EqualFold(string(k), "content-length") {
			length, err = strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				return 0, -1, nil, fmt.Errorf("bad content-length %q", v)
			}
		}
	}
	if length < 0 {
		return 0, -1, nil, errors.New("reply has no content-length")
	}
	body = make([]byte, length)
	_, err = io.ReadFull(r, body)
	return status, exit, body, err
}

func request(host, path string, payload []byte, keepAlive bool) []byte {
	conn := "close"
	if keepAlive {
		conn = "keep-alive"
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: %s\r\n\r\n",
		path, host, len(payload), conn)
	return append([]byte(head), payload...)
}

// client makes calls until ctx ends and returns their latencies.
type client func(ctx context.Context, reqs [][]byte, first int, ok, failed *atomic.Int64) []time.Duration

// shimClient makes one new Unix connection per call.
func shimClient(socket string) client {
	return func(ctx context.Context, reqs [][]byte, first int, ok, failed *atomic.Int64) []time.Duration {
		var lat []time.Duration
		for n := first; ctx.Err() == nil; n++ {
			t0 := time.Now()
			err := func() error {
				conn, err := net.DialTimeout("unix", socket, 10*time.Second)
				if err != nil {
					return err
				}
				defer conn.Close()
				status, exit, body, err := exchangeExit(conn, bufio.NewReader(conn), reqs[n%len(reqs)])
				if err != nil {
					return err
				}
				// A raw reply's header, or else the envelope, carries
				// the agent's exit code; 0 and 2 are answers, anything
				// else is a failure.
				answered := exit == 0 || exit == 2 ||
					exit < 0 && (bytes.Contains(body, []byte(`"exit_code":0`)) || bytes.Contains(body, []byte(`"exit_code":2`)))
				if status != 200 || !answered {
					return fmt.Errorf("daemon answered %d (exit %d): %.200s", status, exit, body)
				}
				return nil
			}()
			if err != nil {
				failed.Add(1)
				continue
			}
			ok.Add(1)
			lat = append(lat, time.Since(t0))
		}
		return lat
	}
}

// httpClient keeps one loopback connection per client.
func httpClient(addr string) client {
	return func(ctx context.Context, reqs [][]byte, first int, ok, failed *atomic.Int64) []time.Duration {
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
				c, err := net.DialTimeout("tcp", addr, 10*time.Second)
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

// clockTick is USER_HZ, which Linux fixes at 100 for /proc.
const clockTick = 100

func main() {
	socket := flag.String("socket", "", "the daemon's socket (one connection per call)")
	hookURL := flag.String("http", "", "the daemon's http hook URL (keep-alive per client)")
	clients := flag.Int("c", 64, "concurrent clients")
	dur := flag.Duration("d", 10*time.Second, "how long to run")
	agentName := flag.String("agent", "claude", "agent the payloads are for (socket mode)")
	pid := flag.Int("pid", 0, "the daemon's pid, to report its CPU per decision")
	raw := flag.Bool("raw", true, "socket mode: send the shim's own request (hookclient.Encode, asking for the raw reply); false sends the older request answered with the JSON envelope")
	flag.Parse()
	if (*socket == "") == (*hookURL == "") || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: loadgen (-socket PATH | -http URL) [-c N] [-d DURATION] [-pid PID] PAYLOAD...")
		os.Exit(2)
	}
	var reqs [][]byte
	var run client
	for _, p := range flag.Args() {
		b, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		if *socket != "" && *raw {
			// Byte for byte what narrowd hook sends.
			reqs = append(reqs, hookclient.Encode(hookclient.Request{Agent: *agentName, Payload: b}))
		} else if *socket != "" {
			reqs = append(reqs, request("narrowd", daemon.HookPath+*agentName, b, false))
		} else {
			u, err := url.Parse(*hookURL)
			if err != nil {
				fmt.Fprintln(os.Stderr, "loadgen:", err)
				os.Exit(2)
			}
			reqs = append(reqs, request(u.Host, u.RequestURI(), b, true))
		}
	}
	mode := "shim (socket, connection per call, raw reply)"
	if !*raw {
		mode = "shim (socket, connection per call, JSON envelope)"
	}
	if *socket != "" {
		run = shimClient(*socket)
	} else {
		u, _ := url.Parse(*hookURL)
		run = httpClient(u.Host)
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
		wg.Go(func() { lat[i] = run(ctx, reqs, i, &ok, &failed) })
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
	fmt.Printf("mode=%s clients=%d duration=%s decisions=%d errors=%d decisions/s=%.0f latency p50=%s p99=%s\n",
		mode, *clients, elapsed.Round(time.Millisecond), ok.Load(), failed.Load(),
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
