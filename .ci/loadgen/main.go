// Command loadgen drives a running narrowd daemon over its Unix socket
// with many concurrent shim clients (one connection per call, as each
// `narrowd hook` process makes) and prints sustained decisions per second.
// .ci/bench-hook.sh runs it; it is not part of CI.
//
//	go run ./.ci/loadgen -socket PATH -c 64 -d 10s payload.json...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narrowd/narrowd/daemon"
)

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
			c := daemon.Client{Socket: *socket, Timeout: 10 * time.Second}
			for n := 0; ctx.Err() == nil; n++ {
				t0 := time.Now()
				_, err := c.Hook(context.Background(), *agentName, payloads[(i+n)%len(payloads)], nil)
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
