package main

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/narrowd/narrowd/sandbox"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"narrowd": main})
}

func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:  "../../testdata/script",
		Cmds: map[string]func(*testscript.TestScript, bool, []string){"waitsock": waitSock},
		// [landlock]: this kernel can run narrowd's sandbox, so a
		// serving daemon issues tickets.
		Condition: func(cond string) (bool, error) {
			if cond == "landlock" {
				return sandbox.LandlockABI() >= 1, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// waitSock is the script command "waitsock PATH": it waits up to ten
// seconds until a Unix stream socket at PATH accepts a connection.
// "! waitsock PATH" asserts that nothing accepts one there now (a stale
// socket file, or none). A connection starts a socket-activated daemon.
func waitSock(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: [!] waitsock PATH")
	}
	path := ts.MkAbs(args[0])
	dial := func() error {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}
	if neg {
		if dial() == nil {
			ts.Fatalf("waitsock: %s accepts connections", path)
		}
		return
	}
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err = dial(); err == nil {
			return
		}
	}
	ts.Fatalf("waitsock: nothing accepts connections at %s after 10s: %v", path, err)
}
