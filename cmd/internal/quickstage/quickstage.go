// Package quickstage runs narrowd's sandbox stages before the rest of
// narrowd starts. On the way into its sandbox, narrowd exec starts narrowd
// twice more (the net stage, then the lock stage, which becomes the
// program), and a Go program initialises every package it links before
// main: in narrowd that is CEL, protobuf, Prometheus and the MCP SDK, tens
// of milliseconds that every sandboxed `go test` or `make` would wait for
// twice. Go initialises a package as soon as its imports are, choosing
// among the ready ones in import-path order, so this package, which
// imports only the sandbox and a little of the standard library, runs its
// init before any of those.
package quickstage

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/narrowd/narrowd/sandbox"
)

// Failed is the exit code when nothing ran (as env(1) and timeout(1) use
// 125 for their own failures).
const Failed = 125

func init() {
	if len(os.Args) == 4 && slices.Equal(os.Args[1:3], sandbox.StageArgs("")[:2]) {
		os.Exit(Run(os.Args[3], os.Stderr))
	}
}

// Run runs the named stage in this process. A stage ends by executing
// the next one or the program, so Run returns only when it failed: it
// says so on stderr and returns the exit code.
func Run(name string, stderr io.Writer) int {
	err := sandbox.RunStage(name)
	fmt.Fprintf(stderr, "narrowd exec: sandbox: %v; nothing ran\n", err)
	return Failed
}
