package daemon

import (
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
)

// TestSockDiagUID: the kernel's lookup finds the client's end of a real
// loopback connection and agrees with the table scan, and finds nothing
// for a pair no socket has.
func TestSockDiagUID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	local := s.LocalAddr().(*net.TCPAddr).AddrPort()
	remote := s.RemoteAddr().(*net.TCPAddr).AddrPort()
	uid, inode, err := sockDiag(remote, local)
	if err != nil {
		t.Fatal(err)
	}
	// The inode names the socket found: it must be the client's.
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if uint64(inode) != st.Ino {
		t.Errorf("found socket inode %d, the client's is %d", inode, st.Ino)
	}
	if uid != uint32(os.Getuid()) {
		t.Errorf("uid %d, want %d", uid, os.Getuid())
	}
	scanned, err := tcpPeerUID("/proc/net/../net", local, remote) // not "/proc/net": the scan alone
	if err != nil || scanned != uid {
		t.Errorf("table scan: %d, %v; sock_diag: %d", scanned, err, uid)
	}
	// The server's own end is not the client's: swapped, the pair
	// names the daemon's socket, which is also ours here, so check a
	// pair that does not exist instead.
	if _, err := sockDiagUID(remote, netipPort(local, 1)); err == nil {
		t.Error("a pair no socket has was found")
	}
}

func netipPort(a netip.AddrPort, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr(), port)
}
