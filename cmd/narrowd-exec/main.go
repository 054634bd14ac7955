// Command narrowd-exec is `narrowd exec` in a binary of its own: what the
// daemon rewrites a sandboxed command to (`narrowd-exec --ticket T`) when
// it finds narrowd-exec beside itself, and the binary the sandbox's two
// stages then re-execute. A sandboxed command starts three of these
// processes, and each one's start grows with its binary: this one links
// only [quickstage] (the sandbox and the socket client), about 4 MB
// against narrowd's 32, and its package inits do not wait for CEL and
// protobuf. Arguments quickstage does not read exactly as narrowd's main
// would (--config, help, a flag error) go to the narrowd beside it,
// before anything is done.
//
//	narrowd-exec [--socket PATH] --ticket T
//	narrowd-exec --confine [--write DIR]... -- PROGRAM [ARG]...
package main

import (
	"fmt"
	"os"

	"github.com/narrowd/narrowd/cmd/internal/quickhook"
	"github.com/narrowd/narrowd/cmd/internal/quickstage"
)

func main() {
	argv := os.Args[1:]
	if code, done := quickstage.Exec(argv, os.Stderr, os.Getenv); done {
		os.Exit(code)
	}
	err := quickhook.ExecNarrowd("exec", argv)
	os.Exit(quickstage.Fail(os.Stderr, fmt.Errorf("cannot hand these arguments to narrowd: %w", err)))
}
