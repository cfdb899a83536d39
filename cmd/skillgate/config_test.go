package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseServe(t *testing.T, args ...string) (*serveConfig, error) {
	t.Helper()
	cmd := newServeCommand()
	cfg := &serveConfig{}
	cmd.ResetFlags()
	registerServeFlags(cmd.Flags(), cfg)
	require.NoError(t, cmd.Flags().Parse(args))
	return cfg, loadConfig(cmd)
}

func TestConfigLayers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "skillgate.yaml")
	require.NoError(t, os.WriteFile(file, []byte("keepalive-interval: 10s\nmax-inflight: 8\nlisten: 127.0.0.1:7000\n"), 0o600))
	t.Setenv("SKILLGATE_MAX_INFLIGHT", "16")
	t.Setenv("SKILLGATE_FRAME_TIMEOUT", "5s")

	cfg, err := parseServe(t, "--config", file, "--listen", "127.0.0.1:7001")
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, cfg.KeepaliveInterval, "from the file")
	assert.Equal(t, 16, cfg.MaxInflight, "the environment beats the file")
	assert.Equal(t, 5*time.Second, cfg.FrameTimeout, "from the environment")
	assert.Equal(t, "127.0.0.1:7001", cfg.Listen, "the command line beats everything")
	assert.Equal(t, 20*time.Second, cfg.KeepaliveTimeout, "defaults stay")
}

func TestConfigRejectsBadValues(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"unknown key":             "keepalive-intervall: 10s\n",
		"duration without a unit": "keepalive-interval: 30\n",
		"not a number":            "max-inflight: many\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name+".yaml")
			require.NoError(t, os.WriteFile(file, []byte(content), 0o600))
			_, err := parseServe(t, "--config", file)
			assert.Error(t, err)
		})
	}
	t.Run("bad environment value", func(t *testing.T) {
		t.Setenv("SKILLGATE_MAX_MESSAGE_SIZE", "1MB")
		_, err := parseServe(t)
		assert.ErrorContains(t, err, "max-message-size")
	})
}

func TestValidate(t *testing.T) {
	cfg, err := parseServe(t)
	require.NoError(t, err)
	require.NoError(t, cfg.validate())
	cfg.TLSListen = "127.0.0.1:7443"
	assert.ErrorContains(t, cfg.validate(), "--tls-cert")
	cfg.TLSListen, cfg.Listen, cfg.HTTPListen = "", "", ""
	assert.ErrorContains(t, cfg.validate(), "nothing to serve")
}

// The README documents every serve flag in its table.
func TestReadmeDocumentsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	cmd := newServeCommand()
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		assert.Contains(t, string(readme), "| `--"+f.Name+"` |", "README lacks a row for --%s", f.Name)
	})
}

// --max-total-queued-bytes: explicit values win, -1 means no limit, and
// the default is a quarter of the memory limit with a floor of 64
// connections' worth of queue.
func TestTotalQueuedBudget(t *testing.T) {
	cfg, err := parseServe(t)
	require.NoError(t, err)
	const gib = 1 << 30
	assert.Equal(t, int64(gib), cfg.totalQueued(4*gib), "a quarter of the memory")
	assert.Equal(t, int64(64*8*cfg.MaxMessageSize), cfg.totalQueued(64<<20), "the floor on a small box")
	assert.Equal(t, int64(64*8*cfg.MaxMessageSize), cfg.totalQueued(0), "memory unknown")
	cfg.MaxQueuedBytes = 1 << 20
	assert.Equal(t, int64(64<<20), cfg.totalQueued(0), "the floor follows --max-queued-bytes")
	cfg.MaxTotalQueued = 123 << 20
	assert.Equal(t, int64(123<<20), cfg.totalQueued(4*gib))
	cfg.MaxTotalQueued = -1
	assert.Zero(t, cfg.totalQueued(4*gib), "no limit")
	require.NoError(t, cfg.validate())
	cfg.MaxTotalQueued = -2
	assert.ErrorContains(t, cfg.validate(), "--max-total-queued-bytes")
	cfg.MaxTotalQueued = 100
	assert.ErrorContains(t, cfg.validate(), "at least one message")
	assert.Positive(t, memoryLimit(), "this machine's memory is readable")
}

// Initialize's limits come from the flags that own them.
func TestInitializeLimitsFromFlags(t *testing.T) {
	cfg, err := parseServe(t, "--max-message-size", "65536", "--max-inflight", "9", "--max-blob-size", "1000",
		"--run-timeout", "3s", "--max-run-timeout", "1m")
	require.NoError(t, err)
	l := cfg.limits(cfg.session())
	assert.Equal(t, 65536, l.MaxMessageSize)
	assert.Equal(t, 9, l.MaxInflight)
	assert.Equal(t, int64(1000), l.MaxBlobSize)
	assert.Equal(t, int64(3000), l.DefaultRunTimeoutMS)
	assert.Equal(t, int64(60000), l.MaxRunTimeoutMS)
	assert.Positive(t, l.MaxOutputBytes)
	assert.Positive(t, l.LogsPreviewBytes)
}
