package daemon

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// errNoPeer reports that the peer's socket could not be found.
var errNoPeer = errors.New("peer socket not found")

// peerUID returns the uid of the process at the other end of c: from
// SO_PEERCRED for a Unix socket, from the kernel's socket table
// (/proc/net/tcp and tcp6) for a loopback TCP connection.
func peerUID(c net.Conn, procNet string) (uint32, error) {
	switch c := c.(type) {
	case *net.UnixConn:
		return unixPeerUID(c)
	case *net.TCPConn:
		local, ok1 := c.LocalAddr().(*net.TCPAddr)
		remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
		if !ok1 || !ok2 {
			return 0, errors.New("tcp connection without addresses")
		}
		return tcpPeerUID(procNet, local.AddrPort(), remote.AddrPort())
	default:
		return 0, fmt.Errorf("cannot identify the peer of a %T", c)
	}
}

func unixPeerUID(c *net.UnixConn) (uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("failed to reach socket: %w", err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, fmt.Errorf("failed to reach socket: %w", err)
	}
	if credErr != nil {
		return 0, fmt.Errorf("failed to read SO_PEERCRED: %w", credErr)
	}
	return cred.Uid, nil
}

// tcpPeerUID finds the client's end of a loopback connection in the
// socket tables under procNet (normally /proc/net): the row whose local
// address is our remote and whose remote address is our local, and
// returns its uid column. The client's row, not ours: ours is owned by
// the daemon.
func tcpPeerUID(procNet string, local, remote netip.AddrPort) (uint32, error) {
	if !local.Addr().Unmap().IsLoopback() || !remote.Addr().Unmap().IsLoopback() {
		return 0, errors.New("not a loopback connection")
	}
	if procNet == "/proc/net" {
		// The kernel's own lookup by address pair; the table scan
		// stays as the fallback (and for tests, which fake the table).
		if uid, err := sockDiagUID(remote, local); err == nil {
			return uid, nil
		}
	}
	var errs []error
	for _, name := range []string{"tcp", "tcp6"} {
		uid, err := scanTCPTable(procNet+"/"+name, remote, local)
		if err == nil {
			return uid, nil
		}
		errs = append(errs, err)
	}
	return 0, errors.Join(errs...)
}

// scanTCPTable looks for the row with local address wantLocal and remote
// address wantRemote in one /proc/net/tcp-style table. It matches the
// kernel's hex text of the address pair first and parses only that row:
// the table holds every socket of the network namespace.
func scanTCPTable(path string, wantLocal, wantRemote netip.AddrPort) (uint32, error) {
	six := strings.HasSuffix(path, "6")
	lh, ok1 := procAddrHex(wantLocal, six)
	rh, ok2 := procAddrHex(wantRemote, six)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("%s: %w", path, errNoPeer)
	}
	pair := []byte(" " + lh + " " + rh + " ")
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 512), 4096)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, pair) {
			continue
		}
		fields := bytes.Fields(line)
		if len(fields) < 8 {
			continue
		}
		uid, err := strconv.ParseUint(string(fields[7]), 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%s: bad uid column %q", path, fields[7])
		}
		return uint32(uid), nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("failed to read %s: %w", path, err)
	}
	return 0, fmt.Errorf("%s: %w", path, errNoPeer)
}

// procAddrHex formats an address as the kernel prints it in
// /proc/net/tcp (IPv4, 8 hex digits) or tcp6 (IPv6, 32 hex digits, IPv4
// as ::ffff:a.b.c.d): each 32-bit word in host byte order, then the port.
func procAddrHex(ap netip.AddrPort, six bool) (string, bool) {
	a := ap.Addr().Unmap()
	var raw []byte
	switch {
	case a.Is4() && !six:
		b := a.As4()
		raw = b[:]
	case a.Is4() && six:
		b := netip.AddrFrom16(netip.AddrFrom4(a.As4()).As16()).As16()
		raw = b[:]
	case a.Is6() && six:
		b := a.As16()
		raw = b[:]
	default:
		return "", false
	}
	var sb strings.Builder
	for w := 0; w < len(raw); w += 4 {
		fmt.Fprintf(&sb, "%08X", binary.NativeEndian.Uint32(raw[w:]))
	}
	fmt.Fprintf(&sb, ":%04X", ap.Port())
	return sb.String(), true
}
