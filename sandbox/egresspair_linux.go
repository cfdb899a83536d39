package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The gateway's side of the egress path (see pid1's setupNetwork): the
// socket pair the listener travels over, and its receipt.

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
