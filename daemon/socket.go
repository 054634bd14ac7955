package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrRunning reports that a live daemon already answers on the socket.
var ErrRunning = errors.New("a narrowd daemon is already running")

// Listen opens the daemon's Unix socket at path (the safesocket pattern):
// it creates the directory with mode 0700 (and refuses an existing one
// that another user owns or others can enter), refuses to start if a live
// daemon answers on path, removes a stale socket file, listens, and makes
// the socket 0600.
func Listen(path string) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("no socket path")
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create socket directory: %w", err)
	}
	if err := checkPrivateDir(dir); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", path, ErrRunning)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("failed to remove stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("failed to listen on %s: %w", path, err)
	}
	// The directory is 0700, so nobody else could reach the socket before
	// this chmod.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("failed to restrict socket: %w", err)
	}
	// Shutdown removes the file itself; closing must not race a new
	// daemon that already replaced it.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	return ln, nil
}

// checkPrivateDir makes sure dir is a directory this user owns that no one
// else may enter. It never changes an existing directory's mode: a
// shared directory such as /tmp must not be closed to its other users.
func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("failed to stat socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket directory %s is not a directory", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("socket directory %s: no owner information", dir)
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("socket directory %s is owned by uid %d, not %d", dir, st.Uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("socket directory %s has mode %04o: others could reach the socket; use a directory only you can enter", dir, fi.Mode().Perm())
	}
	return nil
}

// ListenLoopback listens on a TCP address that must be a loopback IP
// literal with a port, such as 127.0.0.1:8787 or [::1]:8787;
// localhost:PORT means 127.0.0.1:PORT. Other names and addresses are
// refused: the listeners carry no authentication but the peer's uid,
// which only loopback lets narrowd see.
func ListenLoopback(ctx context.Context, addr string) (net.Listener, error) {
	if port, ok := strings.CutPrefix(addr, "localhost:"); ok {
		addr = "127.0.0.1:" + port
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: want a loopback IP and port such as 127.0.0.1:8787: %w", addr, err)
	}
	if !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("listen address %q is not loopback", addr)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", ap.String())
	if err != nil {
		return nil, fmt.Errorf("failed to listen on %s: %w", addr, err)
	}
	return ln, nil
}
