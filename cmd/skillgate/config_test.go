package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
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

func TestSandboxModeFlag(t *testing.T) {
	cfg, err := parseServe(t)
	require.NoError(t, err)
	assert.Equal(t, "auto", cfg.SandboxMode)
	for _, mode := range []string{"auto", "root", "rootless"} {
		cfg, err := parseServe(t, "--sandbox-mode", mode)
		require.NoError(t, err)
		require.NoError(t, cfg.validate(), mode)
		assert.Equal(t, mode, string(cfg.sandbox(zerolog.Nop()).Mode))
	}
	t.Setenv("SKILLGATE_SANDBOX_MODE", "rootless")
	cfg, err = parseServe(t)
	require.NoError(t, err)
	assert.Equal(t, "rootless", cfg.SandboxMode, "from the environment")
	for _, bad := range []string{"ROOT", "userns", "root rootless"} {
		cfg, err := parseServe(t, "--sandbox-mode", bad)
		require.NoError(t, err)
		assert.ErrorContains(t, cfg.validate(), "--sandbox-mode must be auto, root or rootless", "%q", bad)
	}
}

// The documentation has a row for every serve flag in a flag table: the
// README, the docs/ pages, or a DOCS-PENDING-*.md section written for
// them and not yet placed.
func TestReadmeDocumentsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	docs := string(readme)
	for _, pattern := range []string{"../../docs/*.md", "../../DOCS-PENDING-*.md"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			docs += string(data)
		}
	}
	cmd := newServeCommand()
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		assert.Contains(t, docs, "| `--"+f.Name+"` |", "the documentation lacks a row for --%s", f.Name)
	})
}

func TestSandboxDetailsWhenUnavailable(t *testing.T) {
	got := sandboxDetails(nil, "isolation does not work on this machine: rootless mode:\nsandbox did not start:  clone: operation not permitted\n")
	assert.Equal(t, "sandbox: unavailable: isolation does not work on this machine: rootless mode: sandbox did not start: clone: operation not permitted", got,
		"one line, whatever the error looked like")
}
