//go:build linux

package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BPF opcodes (linux/filter.h); x/sys/unix has the structs, not these.
const (
	bpfLdWAbs = 0x20 // BPF_LD|BPF_W|BPF_ABS
	bpfJeqK   = 0x15 // BPF_JMP|BPF_JEQ|BPF_K
	bpfJgeK   = 0x35 // BPF_JMP|BPF_JGE|BPF_K
	bpfAndK   = 0x54 // BPF_ALU|BPF_AND|BPF_K
	bpfRetK   = 0x06 // BPF_RET|BPF_K

	// Offsets in struct seccomp_data.
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits of args[0] on little-endian machines
	offArg1 = 24

	x32Bit = 0x40000000
)

// filterArch is what the filter needs to know of the machine.
type filterArch struct {
	audit   uint32
	x32     bool // amd64: refuse the x32 syscall numbers, which alias others
	socket  uint32
	sockets uint32 // socketpair
	uring   [3]uint32
}

func machine() (filterArch, error) {
	uring := [3]uint32{unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER}
	switch runtime.GOARCH {
	case "amd64":
		return filterArch{unix.AUDIT_ARCH_X86_64, true, unix.SYS_SOCKET, unix.SYS_SOCKETPAIR, uring}, nil
	case "arm64":
		return filterArch{unix.AUDIT_ARCH_AARCH64, false, unix.SYS_SOCKET, unix.SYS_SOCKETPAIR, uring}, nil
	}
	return filterArch{}, fmt.Errorf("%w: no seccomp filter for %s", ErrUnsupported, runtime.GOARCH)
}

// filter builds the seccomp program:
//   - another architecture's calling convention: kill the process (its
//     numbers mean other syscalls);
//   - x32 numbers (amd64): ENOSYS;
//   - io_uring_setup/enter/register: ENOSYS, because io_uring can open
//     sockets without the socket syscall (IORING_OP_SOCKET);
//   - socket(AF_UNIX, …): EPERM. A new Unix socket could reach any
//     relay on the host by path (a D-Bus session, an ssh or docker
//     socket, an agent's proxy), which a network namespace does not stop;
//   - socketpair(AF_UNIX, SOCK_DGRAM, …): EPERM, because a datagram
//     socket may still sendto a host socket by path; stream and seqpacket
//     pairs stay connected to each other only (node and others use them
//     for child stdio);
//   - everything else is allowed.
func filter(m filterArch) []unix.SockFilter {
	ret := func(v uint32) unix.SockFilter { return unix.SockFilter{Code: bpfRetK, K: v} }
	ld := func(off uint32) unix.SockFilter { return unix.SockFilter{Code: bpfLdWAbs, K: off} }
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: bpfJeqK, K: k, Jt: jt, Jf: jf}
	}
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		kill   = unix.SECCOMP_RET_KILL_PROCESS
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	p := []unix.SockFilter{
		ld(offArch),
		jeq(m.audit, 1, 0),
		ret(kill),
		ld(offNr),
	}
	if m.x32 {
		p = append(p, unix.SockFilter{Code: bpfJgeK, K: x32Bit, Jt: 0, Jf: 1}, ret(enosys))
	}
	for _, nr := range m.uring {
		p = append(p, jeq(nr, 0, 1), ret(enosys))
	}
	// socket: if args[0] == AF_UNIX refuse, else allow.
	p = append(p,
		jeq(m.socket, 0, 3),
		ld(offArg0),
		jeq(unix.AF_UNIX, 0, 1),
		ret(eperm),
		ld(offNr), // back to the number for the next test (a no-op when not socket)
	)
	// socketpair: if args[0] == AF_UNIX && (args[1] & 0xf) == SOCK_DGRAM refuse.
	p = append(p,
		jeq(m.sockets, 0, 6),
		ld(offArg0),
		jeq(unix.AF_UNIX, 0, 4),
		ld(offArg1),
		unix.SockFilter{Code: bpfAndK, K: 0xf},
		jeq(unix.SOCK_DGRAM, 0, 1),
		ret(eperm),
		ret(allow),
	)
	return p
}

// installSeccomp sets no_new_privs and installs the filter on every
// thread of the process (TSYNC: a Go process is multi-threaded, and TSYNC
// also sets no_new_privs on the other threads).
func installSeccomp() error {
	m, err := machine()
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("failed to set no_new_privs: %w", err)
	}
	prog := filter(m)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("failed to install the seccomp filter: %w", errno)
	}
	return nil
}
