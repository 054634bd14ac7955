// Command loadgen drives a running narrowd daemon over its Unix socket
// with many concurrent shim clients (one connection per call, as each
// `narrowd hook` process makes) and prints sustained decisions per second.
// .ci/bench-hook.sh runs it; it is not part of CI.
//
//	go run ./.ci/loadgen -socket PATH -c 64 -d 10s payload.json...
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narrowd/narrowd/daemon"
)

// hook makes one shim exchange: a new connection, one POST, the reply
// envelope read whole, as narrowd-hook does (a lean client, so that the
// load generator's own CPU, on the same cores, skews the figure less).
func hook(socket, agentName string, payload []byte) error {
	conn, err := net.DialTimeout("unix", socket, 10*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := fmt.Sprintf("POST %s%s HTTP/1.1\r\nHost: narrowd\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		daemon.HookPath, agentName, len(payload))
	if _, err := conn.Write(append([]byte(req), payload...)); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env daemon.Envelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return err
	}
	if resp.StatusCode != 200 || env.ExitCode != 0 && env.ExitCode != 2 {
		return fmt.Errorf("daemon answered %s, exit code %d", resp.Status, env.ExitCode)
	}
	return nil
}

func main() {
	socket := flag.String("socket", "", "the daemon's socket")
	clients := flag.Int("c", 64, "concurrent clients")
	dur := flag.Duration("d", 10*time.Second, "how long to run")
	agentName := flag.String("agent", "claude", "agent the payloads are for")
	flag.Parse()
	if *socket == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: loadgen -socket PATH [-c N] [-d DURATION] PAYLOAD...")
		os.Exit(2)
	}
	var payloads [][]byte
	for _, p := range flag.Args() {
		b, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		payloads = append(payloads, b)
	}
	var ok, failed atomic.Int64
	lat := make([][]time.Duration, *clients)
	ctx, cancel := context.WithTimeout(context.Background(), *dur)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for i := range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				t0 := time.Now()
				err := hook(*socket, *agentName, payloads[(i+n)%len(payloads)])
				if err != nil {
					failed.Add(1)
					continue
				}
				ok.Add(1)
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
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
	fmt.Printf("clients=%d duration=%s decisions=%d errors=%d decisions/s=%.0f latency p50=%s p99=%s\n",
		*clients, elapsed.Round(time.Millisecond), ok.Load(), failed.Load(),
		float64(ok.Load())/elapsed.Seconds(), pct(50).Round(time.Microsecond), pct(99).Round(time.Microsecond))
	if failed.Load() > 0 {
		os.Exit(1)
	}
}
