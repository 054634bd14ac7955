package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"

	"golang.org/x/sys/unix"
)

// peerProcess returns the pid of the process at the other end of the
// request's Unix connection and a pidfd for it: SO_PEERPIDFD where the
// kernel has it (6.5+), else pidfd_open of the SO_PEERCRED pid, checked
// again afterwards so that a recycled pid is not taken for the peer.
func peerProcess(r *http.Request) (pid, pidfd int, err error) {
	pc, _ := r.Context().Value(connKey{}).(*peerConn)
	if pc == nil {
		return 0, -1, errors.New("no peer connection")
	}
	uc, ok := socketOf(pc.Conn).(*net.UnixConn)
	if !ok {
		return 0, -1, errors.New("tickets are redeemed only over the Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, -1, err
	}
	var cred *unix.Ucred
	var cerr, perr error
	pidfd = -1
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		pidfd, perr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	}); err != nil {
		return 0, -1, err
	}
	if cerr != nil {
		return 0, -1, fmt.Errorf("failed to read SO_PEERCRED: %w", cerr)
	}
	if cred.Pid <= 0 {
		return 0, -1, errors.New("the peer's pid is not visible to narrowd (another PID namespace)")
	}
	if perr != nil {
		if pidfd, err = unix.PidfdOpen(int(cred.Pid), 0); err != nil {
			return 0, -1, fmt.Errorf("failed to open a pidfd for the peer: %w", err)
		}
	}
	if alive, err := pidfdAlive(pidfd); err != nil || !alive {
		unix.Close(pidfd)
		return 0, -1, errors.New("the peer exited")
	}
	return int(cred.Pid), pidfd, nil
}

// pidfdAlive reports whether the process behind pidfd is still running.
func pidfdAlive(pidfd int) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	if err != nil {
		return false, err
	}
	return n == 0, nil
}

func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}
