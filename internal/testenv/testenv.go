// Package testenv gives narrowd's tests what several packages need from
// the machine: the narrowd binary built from this source tree, a daemon
// started from it, and a user without root to run the sandbox as.
package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Serve starts cmd, a `narrowd serve`, kills it when the test ends, and
// returns once its Unix socket sock accepts connections (ten seconds at
// most).
func Serve(t testing.TB, cmd *exec.Cmd, sock string) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	WaitSocket(t, sock)
}

// WaitSocket waits up to ten seconds for something to listen on the Unix
// socket path.
func WaitSocket(t testing.TB, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s", path)
		}
	}
}

// built is the narrowd binary this test binary built, once.
var built struct {
	once sync.Once
	bin  string
	err  error
}

// Narrowd builds cmd/narrowd, and cmd/narrowd-hook and cmd/narrowd-exec
// beside it (see [NarrowdHook]), once per test binary and returns narrowd's path. The
// directory is readable by every user, so an unprivileged test user can
// run it. TestMain may call [RemoveNarrowd] after the tests.
func Narrowd() (string, error) {
	built.once.Do(func() { built.bin, built.err = build() })
	return built.bin, built.err
}

// NarrowdHook is the small hook binary [Narrowd] built beside narrowd:
// `narrowd install` writes it into the agents' settings when it is there.
func NarrowdHook() (string, error) {
	bin, err := Narrowd()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(bin), "narrowd-hook"), nil
}

// RemoveNarrowd removes the binary [Narrowd] built, if it built one. Call
// it only once the tests are done.
func RemoveNarrowd() {
	if built.bin != "" {
		os.RemoveAll(filepath.Dir(built.bin))
	}
}

func build() (string, error) {
	dir, err := os.MkdirTemp("", "narrowd-bin-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no go command to build narrowd: %w", err)
	}
	out, err := exec.Command(gobin, "build", "-o", dir+string(filepath.Separator),
		"github.com/narrowd/narrowd/cmd/narrowd", "github.com/narrowd/narrowd/cmd/narrowd-hook",
		"github.com/narrowd/narrowd/cmd/narrowd-exec").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "narrowd"), nil
}

// TestUser is the unprivileged user sandbox tests run as when the tests
// run as root.
const TestUser = "narrowd-test"

// Unprivileged returns a user without root: the current one when it is
// not root, else TestUser, created when absent. cred is nil for the
// current user, else the credential to start processes as TestUser.
func Unprivileged() (uid, gid int, cred *syscall.Credential, err error) {
	uid, gid = os.Getuid(), os.Getgid()
	if uid != 0 {
		return uid, gid, nil, nil
	}
	u, err := user.Lookup(TestUser)
	if err != nil {
		out, aerr := exec.Command("useradd", "-r", "-M", "-s", "/usr/sbin/nologin", TestUser).CombinedOutput()
		if aerr != nil {
			return 0, 0, nil, fmt.Errorf("running as root and cannot create the unprivileged user %s: %v\n%s", TestUser, aerr, out)
		}
		if u, err = user.Lookup(TestUser); err != nil {
			return 0, 0, nil, err
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}
