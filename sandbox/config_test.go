package sandbox

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Every bound of a Config holds exactly: the value at the bound is valid,
// one step past it is refused with the field's message.
func TestConfigBounds(t *testing.T) {
	for _, c := range []struct {
		name      string
		at, past  func(*Config)
		pastError string
	}{
		{"queue", func(c *Config) { c.QueueSize = 1 }, func(c *Config) { c.QueueSize = -1 }, "QueueSize is negative"},
		{"warm pool", func(c *Config) { c.WarmPool = 0 }, func(c *Config) { c.WarmPool = -1 }, "WarmPool is negative"},
		{"warm memory", func(c *Config) { c.WarmMemoryBytes = 0 }, func(c *Config) { c.WarmMemoryBytes = -1 }, "WarmMemoryBytes is negative"},
		{"templates", func(c *Config) { c.MaxTemplates = 1 }, func(c *Config) { c.MaxTemplates = -1 }, "MaxTemplates is negative"},
		{"default timeout", func(c *Config) { c.DefaultTimeout = c.MaxTimeout }, func(c *Config) { c.DefaultTimeout = c.MaxTimeout + 1 }, "DefaultTimeout exceeds MaxTimeout"},
		{"cpu time", func(c *Config) { c.CPUTime = 0 }, func(c *Config) { c.CPUTime = -1 }, "a timeout is negative"},
		{"memory", func(c *Config) { c.MemoryBytes = 32 << 20 }, func(c *Config) { c.MemoryBytes = 32<<20 - 1 }, "MemoryBytes is below 32 MiB"},
		{"pids", func(c *Config) { c.Pids = 8 }, func(c *Config) { c.Pids = 7 }, "Pids is below 8"},
		{"open files", func(c *Config) { c.OpenFiles = 16 }, func(c *Config) { c.OpenFiles = 15 }, "OpenFiles is below 16"},
		{"file size", func(c *Config) { c.FileSizeBytes = 1 }, func(c *Config) { c.FileSizeBytes = -1 }, "a size is negative"},
		{"tmp", func(c *Config) { c.TmpBytes = 1 << 20 }, func(c *Config) { c.TmpBytes = 1<<20 - 1 }, "at least 1 MiB"},
		{"workspace", func(c *Config) { c.WorkspaceBytes = 1 << 20 }, func(c *Config) { c.WorkspaceBytes = 1<<20 - 1 }, "at least 1 MiB"},
		{"logs cap", func(c *Config) { c.LogsHardCap = 2048 }, func(c *Config) { c.LogsHardCap = 2047 }, "LogsHardCap is below the logs preview size"},
		{"output blob bytes", func(c *Config) { c.MaxOutputBlobBytes = 1 }, func(c *Config) { c.MaxOutputBlobBytes = -1 }, "an output blob limit is negative"},
		{"output blobs", func(c *Config) { c.MaxOutputBlobs = 1 }, func(c *Config) { c.MaxOutputBlobs = -1 }, "an output blob limit is negative"},
		{"run output", func(c *Config) { c.MaxRunOutputBytes = 1 }, func(c *Config) { c.MaxRunOutputBytes = -1 }, "an output blob limit is negative"},
		// The id map's 65536 ids end at 4294967294 at most: (uid_t)-1 is no id.
		{"uid base high", func(c *Config) { c.UIDBase = 1<<32 - 1 - 65536 }, func(c *Config) { c.UIDBase = 1<<32 - 65536 }, "UIDBase leaves no room"},
		{"cpus low", func(c *Config) { c.CPUs = 0.01 }, func(c *Config) { c.CPUs = 0.0099 }, "CPUs 0.0099 is not 0 or between 0.01 and 1024"},
		{"cpus high", func(c *Config) { c.CPUs = 1024 }, func(c *Config) { c.CPUs = 1024.5 }, "CPUs 1024.5 is not 0 or between 0.01 and 1024"},
		{"cgroup dir", func(c *Config) { c.CgroupDir = "/sys/fs/cgroup/x" }, func(c *Config) { c.CgroupDir = "x" }, `CgroupDir "x" is not an absolute path`},
	} {
		cfg := DefaultConfig()
		c.at(&cfg)
		assert.NoError(t, cfg.Validate(), "%s at its bound", c.name)
		cfg = DefaultConfig()
		c.past(&cfg)
		err := cfg.Validate()
		assert.ErrorIs(t, err, errInvalidConfig, "%s past its bound", c.name)
		assert.ErrorContains(t, err, c.pastError, c.name)
	}
}

// The lowest uid base is 1: 0 means the default.
func TestConfigLowestUIDBase(t *testing.T) {
	cfg := DefaultConfig()
	cfg.UIDBase = 1
	assert.NoError(t, cfg.Validate())
}

// The defaults: a worker and a warm sandbox per CPU, a queue of four per
// worker, and the documented limits.
func TestDefaultConfig(t *testing.T) {
	d := DefaultConfig()
	n := runtime.NumCPU()
	assert.Equal(t, n, d.Workers)
	assert.Equal(t, 4*n, d.QueueSize)
	assert.Equal(t, n, d.WarmPool)
	assert.Equal(t, 30*time.Second, d.DefaultTimeout)
	assert.Equal(t, 10*time.Minute, d.MaxTimeout)
	assert.Equal(t, int64(256<<20), d.MemoryBytes)
	assert.Equal(t, 64, d.Pids)
	assert.Equal(t, 256, d.OpenFiles)
	assert.Equal(t, "/usr/bin/python3", d.Python)
	assert.Equal(t, Config{}.withDefaults().QueueSize, d.QueueSize)
}

// The default work directory is per user: root's under the temporary
// directory, another user's under XDG_RUNTIME_DIR when that is absolute,
// else under the temporary directory with the uid in its name.
func TestDefaultWorkDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/4242")
	uid := os.Geteuid()
	if uid == 0 {
		assert.Equal(t, filepath.Join(tmp, "skillgate-sandbox"), defaultWorkDir())
		return
	}
	assert.Equal(t, "/run/user/4242/skillgate-sandbox", defaultWorkDir())
	t.Setenv("XDG_RUNTIME_DIR", "run/user")
	assert.Equal(t, filepath.Join(tmp, "skillgate-sandbox-"+strconv.Itoa(uid)), defaultWorkDir())
}
