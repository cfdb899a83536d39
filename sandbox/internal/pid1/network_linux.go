package pid1

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// The egress path: pid 1 of a sandbox with network brings up loopback in
// the sandbox's empty network namespace, listens on 127.0.0.1:wire.EgressPort
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
	sa := &unix.SockaddrInet4{Port: wire.EgressPort, Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("egress listener: bind: %w", err)
	}
	if err := unix.Listen(fd, 64); err != nil {
		return fmt.Errorf("egress listener: listen: %w", err)
	}
	if err := unix.Sendmsg(wire.FDEgress, []byte{1}, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("egress listener: hand over: %w", err)
	}
	return unix.Close(wire.FDEgress)
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
