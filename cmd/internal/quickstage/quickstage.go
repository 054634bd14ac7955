// Package quickstage runs `narrowd exec` and its sandbox stages before the
// rest of narrowd starts. The daemon sends `go test`, `make` and the like
// to the sandbox as `narrowd exec --ticket T`, which starts narrowd once
// more on the way in (the net stage, which becomes the program; a binary
// with cgo starts the lock stage too for a held command), and a Go
// program initialises every package it links before main: in narrowd
// that is CEL, protobuf, Prometheus and the MCP SDK, tens of
// milliseconds that every sandboxed command would wait for at each
// start. Go initialises a package as soon as its imports are,
// choosing among the ready ones in import-path order, so this package,
// which imports only the sandbox, the light socket client
// [hookclient] and a little of the standard library, runs its init
// before any of those: the stages, `narrowd exec --confine` and
// `narrowd exec --ticket` run there and exit. Arguments it does not take
// exactly as main would (see [ParseExec], [SocketPath]) it leaves to
// main, having done nothing.
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
	if len(os.Args) >= 2 && os.Args[1] == "exec" {
		if code, done := Exec(os.Args[2:], os.Stderr, os.Getenv); done {
			os.Exit(code)
		}
	}
}

// Run runs the named stage in this process. A stage ends by executing
// the next one or the program, so Run returns only when it failed: it
// says so on stderr and returns the exit code.
func Run(name string, stderr io.Writer) int {
	err := sandbox.RunStage(name)
	return Fail(stderr, fmt.Errorf("sandbox: %w", err))
}
