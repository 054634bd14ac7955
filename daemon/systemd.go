package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
)

// Notify sends one sd_notify(3) message, such as "READY=1", to the
// datagram socket named by $NOTIFY_SOCKET (passed in as socket). An empty
// socket means narrowd is not running under systemd: nothing is sent and
// no error is returned.
func Notify(socket, state string) error {
	if socket == "" {
		return nil
	}
	name := socket
	switch {
	case name[0] == '@': // abstract namespace
		name = "\x00" + name[1:]
	case name[0] != '/':
		return fmt.Errorf("notify socket %q is neither a path nor abstract", socket)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("failed to reach notify socket: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("failed to notify systemd: %w", err)
	}
	return nil
}

// listenFDsStart is the first file descriptor systemd passes (SD_LISTEN_FDS_START).
const listenFDsStart = 3

// ActivationListener returns the Unix listener systemd passed by socket
// activation, given $LISTEN_PID and $LISTEN_FDS. It returns nil and no
// error when the variables are absent or meant for another process; more
// than one passed socket, or one that is not a listening Unix stream
// socket, is an error.
func ActivationListener(listenPID, listenFDs string) (net.Listener, error) {
	if listenPID == "" || listenFDs == "" {
		return nil, nil
	}
	pid, err := strconv.Atoi(listenPID)
	if err != nil || pid != os.Getpid() {
		return nil, nil
	}
	n, err := strconv.Atoi(listenFDs)
	if err != nil {
		return nil, fmt.Errorf("bad LISTEN_FDS %q: %w", listenFDs, err)
	}
	switch {
	case n == 0:
		return nil, nil
	case n > 1:
		return nil, fmt.Errorf("systemd passed %d sockets; narrowd takes one", n)
	}
	syscall.CloseOnExec(listenFDsStart)
	f := os.NewFile(listenFDsStart, "LISTEN_FD_3")
	if f == nil {
		return nil, errors.New("LISTEN_FDS set but fd 3 is not open")
	}
	defer f.Close() // FileListener dups it
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("fd 3 from systemd is not a listening socket: %w", err)
	}
	if _, ok := ln.(*net.UnixListener); !ok {
		ln.Close()
		return nil, fmt.Errorf("fd 3 from systemd is a %T, want a Unix stream socket", ln)
	}
	return ln, nil
}
