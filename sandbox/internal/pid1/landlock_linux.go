package pid1

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// restrictLandlock confines every thread of the calling process (and what
// it executes) to the sandbox's directories, denies TCP bind/connect and
// scopes signals and abstract unix sockets to the sandbox; with network it
// allows TCP connections to wire.EgressPort (the namespace has only loopback).
// It is a second layer over the mount namespace: where the kernel lacks
// Landlock it does nothing and returns ABI 0; it also sets
// no-new-privileges.
func restrictLandlock(network bool) (int, error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi <= 0 {
		return 0, nil
	}
	rules := []landlock.Rule{
		landlock.RODirs(landlockReadDirs()...),
		// With REFER, a file moves between the writable directories
		// (mv /tmp/x /workspace/outputs/) instead of failing with EXDEV.
		landlock.RWDirs(wire.WorkspacePath, "/tmp", "/dev/shm").WithRefer(),
		landlock.RWFiles(devicePaths()...),
	}
	if network {
		rules = append(rules, landlock.ConnectTCP(wire.EgressPort))
	}
	if err := landlock.V11.BestEffort().Restrict(rules...); err != nil {
		return 0, fmt.Errorf("landlock: %w", err)
	}
	return abi, nil
}

func devicePaths() []string {
	out := make([]string, len(devices))
	for i, d := range devices {
		out[i] = "/dev/" + d
	}
	return out
}
