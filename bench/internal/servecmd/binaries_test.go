package servecmd_test

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/bench/internal/wiretest"
)

// TestBinaries builds each server binary, starts it on 127.0.0.1:0, reads
// the address it prints and runs the common round trips against it.
func TestBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "../../cmd/ceiling", "../../cmd/jrpc2srv", "../../cmd/sgsrv")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, bin := range []string{"ceiling", "jrpc2srv", "sgsrv"} {
		t.Run(bin, func(t *testing.T) {
			addr := start(t, ctx, filepath.Join(dir, bin))
			wiretest.CheckServer(t, addr, bin != "ceiling")
		})
	}
}

func start(t *testing.T, ctx context.Context, bin string) string {
	cmd := exec.CommandContext(ctx, bin, "-listen", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	require.True(t, ok, "first line %q", line)
	return addr
}
