// Command narrowd-hook is `narrowd hook` in a binary of its own: the shim
// an agent starts before every tool call. It links nothing but the early
// answer ([quickhook]) and the socket client, about 2.5 MB against
// narrowd's 32, and a Go process starts in time that grows with its
// binary (the runtime walks its function table and interface tables, and
// faults in their pages). While the daemon answers it replies and exits;
// everything else it hands to the narrowd beside it, which judges
// in-process or blocks. `narrowd install` writes it into the agents'
// settings when it finds it beside narrowd.
//
//	narrowd-hook [--socket PATH] [--config FILE] [--timeout D] [--event E] [--interactive] AGENT
package main

import (
	"os"

	"github.com/narrowd/narrowd/cmd/internal/quickhook"
)

func main() {
	argv := os.Args[1:]
	os.Exit(quickhook.Standalone(argv, func() error { return quickhook.ExecNarrowd("hook", argv) }))
}
