package pid1

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// inOwnNamespaces runs test again in a copy of this test binary, as root
// of a user namespace of its own (mapped to this user) and in the other
// namespaces flags ask for, with env=value set so the copy knows it is
// the child; it returns what the child printed.
func inOwnNamespaces(t *testing.T, test, env, value string, flags uintptr) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env+"="+value)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.Output()
	require.NoError(t, err, "%s in namespaces of its own", test)
	return out
}
