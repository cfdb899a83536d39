package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The egress path: pid 1 of a sandbox with network brings up loopback in
// the sandbox's empty network namespace, listens on 127.0.0.1:EgressPort
// and passes that listening socket to the gateway over a Unix socket pair
// (SCM_RIGHTS). The gateway accepts on it directly: each connection Python
// makes is a socket the gateway holds, so nothing in the sandbox relays
// bytes and the gateway knows which run every connection belongs to. The
// namespace keeps no route anywhere else.

// setupNetwork runs in pid 1 before anything untrusted.
func setupNetwork() error {
	if err := loopbackUp(); err != nil {
		return fmt.Errorf("bring up loopback: %w", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("egress listener: %w", err)
	}
	defer unix.Close(fd)
	sa := &unix.SockaddrInet4{Port: EgressPort, Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("egress listener: bind: %w", err)
	}
	if err := unix.Listen(fd, 64); err != nil {
		return fmt.Errorf("egress listener: listen: %w", err)
	}
	if err := unix.Sendmsg(fdEgress, []byte{1}, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("egress listener: hand over: %w", err)
	}
	return unix.Close(fdEgress)
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// newEgressPair returns the gateway's and pid 1's ends of the socket pair
// the listener travels over.
func newEgressPair() (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("egress socket pair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "egress"), os.NewFile(uintptr(fds[1]), "egress-child"), nil
}

// receiveListener reads the listener pid 1 sent (it does so before Python
// starts, so it is there once the sandbox is ready).
func receiveListener(f *os.File, deadline time.Time) (net.Listener, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	defer c.Close()
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, errors.New("egress: not a unix socket")
	}
	_ = uc.SetReadDeadline(deadline)
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("egress: receive the listener: %w", err)
	}
	fd, err := parseOneFD(oob[:oobn])
	if err != nil {
		return nil, err
	}
	lf := os.NewFile(uintptr(fd), "egress-listener")
	defer lf.Close()
	l, err := net.FileListener(lf)
	if err != nil {
		return nil, fmt.Errorf("egress: listener: %w", err)
	}
	return l, nil
}

func parseOneFD(oob []byte) (int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("egress: no listener received")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		return -1, fmt.Errorf("egress: no listener received")
	}
	return fds[0], nil
}
