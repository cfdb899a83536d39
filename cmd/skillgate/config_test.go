package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/session"
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

// A list in the config file reaches a list flag whole.
func TestConfigFileLists(t *testing.T) {
	file := filepath.Join(t.TempDir(), "skillgate.yaml")
	require.NoError(t, os.WriteFile(file, []byte("http-allowed-origins: [\"https://a.example\", \"https://b.example\"]\nhttp-allowed-hosts: []\n"), 0o600))
	cfg, err := parseServe(t, "--config", file)
	require.NoError(t, err)
	assert.Equal(t, []string{"https://a.example", "https://b.example"}, cfg.HTTPOrigins)
	assert.Empty(t, cfg.HTTPHosts)
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
	cfg.Listen = "127.0.0.1:7400"
	cfg.HTTPOrigins = []string{"evil.example"}
	assert.ErrorContains(t, cfg.validate(), "--http-allowed-origins")
	cfg.HTTPOrigins = []string{"https://app.example"}
	cfg.HTTPHosts = []string{"gw.example:80"}
	assert.ErrorContains(t, cfg.validate(), "--http-allowed-hosts")
}

func TestMaxBlobStoreBytes(t *testing.T) {
	cfg, err := parseServe(t, "--max-blob-store-bytes", "1048576")
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), cfg.MaxBlobStoreBytes)
	require.NoError(t, cfg.validate())
	cfg, err = parseServe(t, "--max-blob-store-bytes", "-1")
	require.NoError(t, err)
	assert.ErrorContains(t, cfg.validate(), "--max-blob-store-bytes must not be negative")
}

// The run record bounds: defaults, flags, and the values refused.
func TestRunRecordBounds(t *testing.T) {
	cfg, err := parseServe(t)
	require.NoError(t, err)
	assert.Equal(t, runs.Bounds{MaxRecords: 10000, MaxBytes: 2 << 30, MaxOwnerRecords: 1000, MaxOwnerBytes: 256 << 20},
		runs.Bounds{MaxRecords: cfg.RunMaxRecords, MaxBytes: cfg.RunMaxRecordBytes,
			MaxOwnerRecords: cfg.RunMaxRecordsPerIdentity, MaxOwnerBytes: cfg.RunMaxRecordBytesPerID})
	cfg, err = parseServe(t, "--run-max-records", "50", "--run-max-records-per-identity", "5",
		"--run-max-record-bytes", "67108864", "--run-max-record-bytes-per-identity", "8388608")
	require.NoError(t, err)
	require.NoError(t, cfg.validate())
	cfg, err = parseServe(t, "--run-max-records", "10", "--run-max-records-per-identity", "10",
		"--run-max-record-bytes", "4194304", "--run-max-record-bytes-per-identity", "4194304")
	require.NoError(t, err)
	require.NoError(t, cfg.validate(), "one identity may have it all, and 4 MiB is enough")
	for _, tc := range []struct{ args []string }{
		{[]string{"--run-max-records", "0"}},
		{[]string{"--run-max-record-bytes-per-identity", "4194303"}},
		{[]string{"--run-max-records-per-identity", "-1"}},
		{[]string{"--run-max-records", "10", "--run-max-records-per-identity", "11"}},
		{[]string{"--run-max-record-bytes", "1048576"}},
		{[]string{"--run-max-record-bytes-per-identity", "0"}},
		{[]string{"--run-max-record-bytes", "8388608", "--run-max-record-bytes-per-identity", "16777216"}},
	} {
		cfg, err := parseServe(t, tc.args...)
		require.NoError(t, err)
		assert.ErrorContains(t, cfg.validate(), "--run-max-record", "%v", tc.args)
	}
}

// docs/operations.md documents every serve flag in its table, and no flag
// the binary lacks: the flags come from the command itself, so a new flag
// without a row fails here.
func TestOperationsDocumentsEveryFlag(t *testing.T) {
	doc, err := os.ReadFile(operationsPage)
	require.NoError(t, err)
	known := map[string]bool{}
	newServeCommand().Flags().VisitAll(func(f *pflag.Flag) {
		if f.Deprecated != "" {
			return // docs/upgrading.md names it, with its replacement
		}
		known[f.Name] = true
		assert.True(t, strings.Contains(string(doc), "| `--"+f.Name+"` |"), "%s lacks a row for --%s", operationsPage, f.Name)
	})
	rows := flagRowRE.FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, rows, "%s has no flag table", operationsPage)
	for _, m := range rows {
		assert.True(t, known[m[1]], "%s documents --%s, which skillgate serve lacks", operationsPage, m[1])
	}
}

// operationsPage is where the flags of "skillgate serve" are documented.
const operationsPage = "../../docs/operations.md"

// flagRowRE matches a row of the flag table: "| `--name` |".
var flagRowRE = regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\|")

// The MCP session bounds have their defaults and are validated: a
// negative cap and an idle timeout that never ends sessions are refused.
func TestMCPSessionFlags(t *testing.T) {
	cfg, err := parseServe(t)
	require.NoError(t, err)
	assert.Equal(t, 1024, cfg.MCPMaxSessions)
	assert.Equal(t, 30*time.Minute, cfg.MCPSessionIdle)
	require.NoError(t, cfg.validate())

	cfg, err = parseServe(t, "--mcp-max-sessions", "-1")
	require.NoError(t, err)
	assert.ErrorContains(t, cfg.validate(), "--mcp-max-sessions must not be negative")
	cfg, err = parseServe(t, "--mcp-session-idle-timeout", "0s")
	require.NoError(t, err)
	assert.ErrorContains(t, cfg.validate(), "--mcp-session-idle-timeout must be positive")
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

// --sandbox-template is also read under its old name, from the command
// line, a config file or the environment, and the new name wins.
func TestSandboxTemplateFlagOldName(t *testing.T) {
	cfg, err := parseServe(t)
	require.NoError(t, err)
	assert.Equal(t, sandbox.TemplateAuto, cfg.sandbox(zerolog.Nop()).Template)
	var old string
	for name := range deprecatedFlags {
		old = name
	}
	cfg, err = parseServe(t, "--"+old, "off")
	require.NoError(t, err)
	require.NoError(t, cfg.validate())
	assert.Equal(t, sandbox.TemplateOff, cfg.sandbox(zerolog.Nop()).Template)
	cfg, err = parseServe(t, "--"+old, "off", "--sandbox-template", "on")
	require.NoError(t, err)
	assert.Equal(t, sandbox.TemplateOn, cfg.sandbox(zerolog.Nop()).Template, "the new name wins")

	file := filepath.Join(t.TempDir(), "skillgate.yaml")
	require.NoError(t, os.WriteFile(file, []byte(old+": off\n"), 0o600))
	cfg, err = parseServe(t, "--config", file)
	require.NoError(t, err)
	assert.Equal(t, sandbox.TemplateOff, cfg.sandbox(zerolog.Nop()).Template, "from the config file")
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
	phys := physicalMemory()
	assert.Positive(t, phys, "MemTotal of /proc/meminfo")
	assert.Zero(t, phys%1024, "whole KiB")
	assert.Positive(t, memoryLimit(), "this machine's memory is readable")
	assert.LessOrEqual(t, memoryLimit(), phys, "a cgroup limit above the machine's memory is none")
}

// --identity-queued-share: half by default, any fraction above 0 up to 1;
// the budget built from it bounds one identity at that part.
func TestIdentityQueuedShare(t *testing.T) {
	cfg, err := parseServe(t)
	require.NoError(t, err)
	assert.Equal(t, 0.5, cfg.IdentityShare)
	assert.Equal(t, int64(50<<20), session.NewFairBudget(100<<20, cfg.IdentityShare).OwnerLimit())
	cfg, err = parseServe(t, "--identity-queued-share", "1")
	require.NoError(t, err)
	require.NoError(t, cfg.validate())
	assert.Zero(t, session.NewFairBudget(100<<20, cfg.IdentityShare).OwnerLimit(), "1: the budget alone")
	for _, bad := range []string{"0", "-0.5", "1.5", "NaN"} {
		cfg, err := parseServe(t, "--identity-queued-share", bad)
		require.NoError(t, err)
		assert.ErrorContains(t, cfg.validate(), "--identity-queued-share", bad)
	}
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

// --auth-authorization-url and --protocol-upgrade-url default to empty (not
// sent) and take only an absolute http or https URL a client can follow.
func TestErrorURLFlags(t *testing.T) {
	cfg, err := parseServe(t)
	require.NoError(t, err)
	assert.Empty(t, cfg.AuthorizationURL)
	assert.Empty(t, cfg.UpgradeURL)
	for _, flag := range []string{"--auth-authorization-url", "--protocol-upgrade-url"} {
		cfg, err := parseServe(t, flag, "https://idp.example.com/authorize?x=1")
		require.NoError(t, err)
		require.NoError(t, cfg.validate(), flag)
		for _, bad := range []string{"/authorize", "ftp://idp.example.com/", "https://", "https://user:pw@idp.example.com/"} {
			cfg, err := parseServe(t, flag, bad)
			require.NoError(t, err)
			assert.ErrorContains(t, cfg.validate(), flag+" must be an absolute http or https URL", "%s %s", flag, bad)
		}
	}
}

func TestUploadAndRunOutputBounds(t *testing.T) {
	cfg, err := parseServe(t)
	require.NoError(t, err)
	assert.Equal(t, blob.DefaultMaxPendingUploads, cfg.MaxPendingUploads)
	assert.Equal(t, int64(sandbox.DefaultMaxRunOutputBytes), cfg.MaxRunOutputBytes)
	assert.Equal(t, int64(sandbox.DefaultMaxRunOutputBytes), cfg.sandbox(zerolog.Nop()).MaxRunOutputBytes)
	cfg, err = parseServe(t, "--max-pending-uploads", "3", "--max-run-output-bytes", "1048576")
	require.NoError(t, err)
	require.NoError(t, cfg.validate())
	assert.Equal(t, 3, cfg.MaxPendingUploads)
	assert.Equal(t, int64(1<<20), cfg.sandbox(zerolog.Nop()).MaxRunOutputBytes)
	for flag, msg := range map[string]string{
		"--max-pending-uploads":  "--max-pending-uploads must be at least 1",
		"--max-run-output-bytes": "--max-run-output-bytes must be positive",
	} {
		cfg, err = parseServe(t, flag, "0")
		require.NoError(t, err)
		assert.ErrorContains(t, cfg.validate(), msg)
	}
}

// TestRunCPUs: --run-cpus reaches the sandbox as its CPU share; shares
// the cgroup cannot take are refused.
func TestRunCPUs(t *testing.T) {
	cfg, err := parseServe(t)
	require.NoError(t, err)
	assert.Zero(t, cfg.sandbox(zerolog.Nop()).CPUs, "no limit by default")
	cfg, err = parseServe(t, "--run-cpus", "1.5")
	require.NoError(t, err)
	require.NoError(t, cfg.validate())
	assert.Equal(t, 1.5, cfg.sandbox(zerolog.Nop()).CPUs)
	for _, bad := range []string{"-1", "0.001", "2000", "NaN"} {
		cfg, err = parseServe(t, "--run-cpus", bad)
		require.NoError(t, err, bad)
		assert.ErrorContains(t, cfg.validate(), "--run-cpus must be 0 or between", bad)
	}
	t.Setenv("SKILLGATE_RUN_CPUS", "two")
	_, err = parseServe(t)
	assert.ErrorContains(t, err, "run-cpus", "a value that is no number")
}

// TestDeprecatedConfigKeyWarns: an old name set in the config file gets
// the same notice as on the command line; current names get none.
func TestDeprecatedConfigKeyWarns(t *testing.T) {
	load := func(yaml string) string {
		file := filepath.Join(t.TempDir(), "skillgate.yaml")
		require.NoError(t, os.WriteFile(file, []byte(yaml), 0o600))
		cmd := newServeCommand()
		cmd.ResetFlags()
		registerServeFlags(cmd.Flags(), &serveConfig{})
		var stderr bytes.Buffer
		cmd.SetErr(&stderr)
		require.NoError(t, cmd.Flags().Parse([]string{"--config", file}))
		require.NoError(t, loadConfig(cmd))
		return stderr.String()
	}
	for old, current := range deprecatedFlags {
		assert.Contains(t, load(old+": off\n"), "Flag --"+old+" has been deprecated, use --"+current)
		assert.Empty(t, load(current+": off\nmax-inflight: 8\n"))
	}
}

// TestDrainDefaults: SIGTERM gives load balancers 5 s to stop routing
// here and in-flight work 30 s to finish.
func TestDrainDefaults(t *testing.T) {
	cfg, err := parseServe(t)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, cfg.DrainDelay)
	assert.Equal(t, 30*time.Second, cfg.DrainTimeout)
}

// --sandbox-warm-pool: two per worker unless given, 0 for cold starts.
func TestSandboxWarmPoolFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 2 * sandbox.DefaultConfig().Workers},
		{[]string{"--sandbox-workers", "3"}, 6},
		{[]string{"--sandbox-warm-pool", "0"}, 0},
		{[]string{"--sandbox-workers", "3", "--sandbox-warm-pool", "1"}, 1},
	} {
		cfg, err := parseServe(t, tc.args...)
		require.NoError(t, err)
		require.NoError(t, cfg.validate())
		assert.Equal(t, tc.want, cfg.sandbox(zerolog.Nop()).WarmPool, "%v", tc.args)
	}
}

// TestValidateBounds: every bound validate checks, at the bound (accepted)
// and one step past it (refused, naming the flag).
func TestValidateBounds(t *testing.T) {
	for _, tc := range []struct {
		flag, at, past string
	}{
		{"--identity-queued-share", "1", "1.001"},
		{"--identity-queued-share", "0.001", "0"},
		{"--mcp-max-sessions", "0", "-1"},
		{"--mcp-session-idle-timeout", "1ns", "0s"},
		{"--mcp-max-skill-tools", "0", "-1"},
		{"--sandbox-max-templates", "1", "0"},
		{"--sandbox-warm-memory", "0", "-1"},
		{"--run-cpus", "0.01", "0.0099"},
		{"--run-cpus", "1024", "1024.01"},
		{"--sandbox-workers", "0", "-1"},
		{"--max-blob-size", "1", "0"},
		{"--max-blob-store-bytes", "0", "-1"},
		{"--max-pending-uploads", "1", "0"},
		{"--max-run-output-bytes", "1", "0"},
		{"--run-retention", "1ns", "0s"},
		{"--blob-ttl", "0s", "-1ns"},
		{"--drain-delay", "0s", "-1ns"},
		{"--drain-timeout", "0s", "-1ns"},
		{"--max-total-queued-bytes", "-1", "-2"},
	} {
		cfg, err := parseServe(t, tc.flag, tc.at)
		require.NoError(t, err, "%s %s", tc.flag, tc.at)
		assert.NoError(t, cfg.validate(), "%s %s", tc.flag, tc.at)
		cfg, err = parseServe(t, tc.flag, tc.past)
		require.NoError(t, err, "%s %s", tc.flag, tc.past)
		assert.ErrorContains(t, cfg.validate(), tc.flag, "%s %s", tc.flag, tc.past)
	}
	cfg, err := parseServe(t, "--max-message-size", "65536", "--max-total-queued-bytes", "65536")
	require.NoError(t, err)
	assert.NoError(t, cfg.validate(), "room for exactly one message")
	cfg, err = parseServe(t, "--max-message-size", "65536", "--max-total-queued-bytes", "65535")
	require.NoError(t, err)
	assert.ErrorContains(t, cfg.validate(), "--max-total-queued-bytes 65535 must hold at least one message")
}

// TestValidateFlagsThatGoTogether: each flag that needs another is
// refused alone and accepted with it.
func TestValidateFlagsThatGoTogether(t *testing.T) {
	tls := []string{"--tls-listen", "127.0.0.1:0", "--tls-cert", "c.pem", "--tls-key", "k.pem"}
	for _, tc := range []struct {
		ok   []string
		bad  []string
		want string
	}{
		{tls, []string{"--tls-listen", "127.0.0.1:0", "--tls-cert", "c.pem"}, "--tls-listen needs --tls-cert and --tls-key"},
		{tls, []string{"--tls-listen", "127.0.0.1:0", "--tls-key", "k.pem"}, "--tls-listen needs --tls-cert and --tls-key"},
		{append([]string{"--tls-client-ca", "ca.pem"}, tls...), []string{"--tls-client-ca", "ca.pem"}, "--tls-client-ca needs --tls-listen"},
		{[]string{"--http-tls-cert", "c.pem", "--http-tls-key", "k.pem", "--http-tls-client-ca", "ca.pem"},
			[]string{"--http-tls-client-ca", "ca.pem"}, "--http-tls-client-ca needs --http-tls-cert"},
		{[]string{"--blob-store", "s3://bucket/prefix", "--s3-region", "eu-west-1"}, []string{"--s3-region", "eu-west-1"}, "need an s3:// --blob-store"},
		{[]string{"--blob-store", "s3://bucket/prefix", "--s3-endpoint", "http://127.0.0.1:9000"}, []string{"--s3-endpoint", "http://127.0.0.1:9000"}, "need an s3:// --blob-store"},
		{[]string{"--blob-store", "s3://bucket", "--s3-path-style"}, []string{"--blob-store", "memory", "--s3-path-style"}, "need an s3:// --blob-store"},
		{[]string{"--blob-store", "s3://bucket/prefix"}, []string{"--blob-store", "s3://"}, "--blob-store: "},
		{[]string{"--run-max-records", "1", "--run-max-records-per-identity", "1"}, []string{"--run-max-records", "0", "--run-max-records-per-identity", "0"}, "--run-max-records and --run-max-records-per-identity must be positive"},
		{[]string{"--run-max-records-per-identity", "1"}, []string{"--run-max-records-per-identity", "0"}, "--run-max-records and --run-max-records-per-identity must be positive"},
		{[]string{"--run-max-records", "1", "--run-max-records-per-identity", "1"}, []string{"--run-max-records", "0", "--run-max-records-per-identity", "1"}, "--run-max-records and --run-max-records-per-identity must be positive"},
	} {
		cfg, err := parseServe(t, tc.ok...)
		require.NoError(t, err, "%v", tc.ok)
		assert.NoError(t, cfg.validate(), "%v", tc.ok)
		cfg, err = parseServe(t, tc.bad...)
		require.NoError(t, err, "%v", tc.bad)
		assert.ErrorContains(t, cfg.validate(), tc.want, "%v", tc.bad)
	}
}
