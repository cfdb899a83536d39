// Package testchild lets a test kill a copy of its own binary at a chosen
// moment, to test what a crash leaves behind. The copy runs a helper that
// the test's TestMain selects by an environment variable.
package testchild

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// KillWhenReady starts this test binary again with env=value set, so that
// its TestMain runs a crash helper that prints "id <id>" and then "ready"
// once the work to be cut is under way. It kills that child with SIGKILL
// at "ready" and returns the id it reported.
func KillWhenReady(t *testing.T, env, value string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+value)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	var id string
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "id "); ok {
			id = rest
		}
		if lines.Text() == "ready" {
			break
		}
	}
	require.NotEmpty(t, id, "child reported an id")
	return id
}
