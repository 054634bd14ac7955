package daemon

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// sockDiagUID asks the kernel, over NETLINK_SOCK_DIAG, for the owner of
// the one TCP socket whose local address is src and remote address dst:
// the client's end of a loopback connection. The kernel looks the socket
// up by its address pair, so the cost does not grow with the number of
// sockets, as reading /proc/net/tcp does (that scan, once per new
// connection, made a burst of 500 HTTP hook calls quadratic).
func sockDiagUID(src, dst netip.AddrPort) (uint32, error) {
	uid, _, err := sockDiag(src, dst)
	return uid, err
}

// sockDiag returns the uid and inode of the TCP socket with local
// address src and remote address dst.
func sockDiag(src, dst netip.AddrPort) (uid, inode uint32, err error) {
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	family := uint8(unix.AF_INET)
	if src.Addr().Is6() {
		family = unix.AF_INET6
	}
	if src.Addr().Is6() != dst.Addr().Is6() {
		return 0, 0, errors.New("mixed address families")
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_INET_DIAG)
	if err != nil {
		return 0, 0, fmt.Errorf("sock_diag: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return 0, 0, fmt.Errorf("sock_diag: %w", err)
	}
	if err := unix.Sendto(fd, sockDiagRequest(family, src, dst), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, 0, fmt.Errorf("sock_diag: %w", err)
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("sock_diag: %w", err)
	}
	return parseSockDiag(buf[:n])
}

// Sizes of the netlink structures (linux/netlink.h, linux/inet_diag.h).
const (
	nlmsgHdrLen   = 16
	diagReqLen    = 56 // inet_diag_req_v2
	diagMsgUIDOff = 4 + 48 + 12
	diagMsgMinLen = diagMsgUIDOff + 8
)

// sockDiagRequest is one SOCK_DIAG_BY_FAMILY request for the TCP socket
// with exactly this address pair, in any state.
func sockDiagRequest(family uint8, src, dst netip.AddrPort) []byte {
	b := make([]byte, nlmsgHdrLen+diagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	r := b[nlmsgHdrLen:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], src.Port())
	binary.BigEndian.PutUint16(id[2:], dst.Port())
	s, d := src.Addr().As16(), dst.Addr().As16()
	if family == unix.AF_INET {
		s4, d4 := src.Addr().As4(), dst.Addr().As4()
		copy(id[4:], s4[:])
		copy(id[20:], d4[:])
	} else {
		copy(id[4:], s[:])
		copy(id[20:], d[:])
	}
	ne.PutUint32(id[36:], 0)          // any interface
	ne.PutUint32(id[40:], ^uint32(0)) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], ^uint32(0))
	return b
}

// parseSockDiag reads the uid and inode from the kernel's answer: one
// inet_diag_msg, or an error message.
func parseSockDiag(b []byte) (uid, inode uint32, err error) {
	ne := binary.NativeEndian
	if len(b) < nlmsgHdrLen {
		return 0, 0, errors.New("sock_diag: short answer")
	}
	switch typ := ne.Uint16(b[4:]); typ {
	case unix.NLMSG_ERROR:
		if len(b) >= nlmsgHdrLen+4 {
			if errno := int32(ne.Uint32(b[nlmsgHdrLen:])); errno < 0 {
				return 0, 0, fmt.Errorf("sock_diag: %w", unix.Errno(-errno))
			}
		}
		return 0, 0, fmt.Errorf("sock_diag: %w", errNoPeer)
	case unix.SOCK_DIAG_BY_FAMILY:
	default:
		return 0, 0, fmt.Errorf("sock_diag: unexpected message type %d", typ)
	}
	msg := b[nlmsgHdrLen:]
	if len(msg) < diagMsgMinLen {
		return 0, 0, errors.New("sock_diag: short message")
	}
	return ne.Uint32(msg[diagMsgUIDOff:]), ne.Uint32(msg[diagMsgUIDOff+4:]), nil
}
