package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/rs/zerolog"
)

// Limits the sandbox applies that are not configurable: they come from the
// Skills Protocol.
const (
	// MaxOutputBytes bounds a run's serialized output.
	MaxOutputBytes = 4096
	// MaxLogsPreview bounds Result.Logs.
	MaxLogsPreview = 2048
	// maxErrorMessage bounds RunError.Message.
	maxErrorMessage = 1024
	// DefaultMaxRunOutputBytes is Config.MaxRunOutputBytes's default: the
	// workspace's size, all a run can fill with real (not sparse) data.
	DefaultMaxRunOutputBytes = 64 << 20
)

// Config configures a Runner. The zero value of a field means its default
// (see DefaultConfig), except WarmPool where 0 turns the pool off.
type Config struct {
	// Mode picks root or rootless isolation; "" means ModeAuto.
	Mode Mode
	// IDMap says which host ids a rootless sandbox maps; "" means
	// IDMapAuto. Root mode ignores it.
	IDMap IDMap
	// CgroupDir is a cgroup v2 directory delegated to the gateway's user
	// (it may create, fill and remove cgroups below it): each run gets a
	// cgroup of its own there. Empty: the gateway's own cgroup, where
	// writable.
	CgroupDir string
	// Python is the absolute path of the interpreter, default
	// "/usr/bin/python3". It must live under /usr, the only host directory
	// the sandbox sees. Use an absolute path: a PATH shim such as pyenv's
	// costs about 100 ms a start.
	Python string
	// Workers bounds concurrent runs, default runtime.NumCPU().
	Workers int
	// QueueSize bounds the runs waiting for a worker, default 4*Workers.
	// When it is full Run fails at once with ErrOverloaded.
	QueueSize int
	// WarmPool is the number of pre-started sandboxes kept ready, default
	// (in DefaultConfig) Workers; 0 starts a sandbox per run.
	WarmPool int
	// WarmMemoryBytes bounds the memory warm sandboxes take together; the
	// pool holds at most this divided by one warm sandbox's measured size.
	// 0: no bound beyond WarmPool.
	WarmMemoryBytes int64
	// DefaultTimeout applies when Job.Timeout is 0, default 30s.
	DefaultTimeout time.Duration
	// MaxTimeout caps Job.Timeout, default 10m.
	MaxTimeout time.Duration
	// MemoryBytes is the cgroup memory limit of a run, default 256 MiB. It
	// covers the run's processes and what they write to /tmp and
	// /workspace (tmpfs pages are charged to the run).
	MemoryBytes int64
	// Pids is the cgroup limit on processes and threads, default 64.
	Pids int
	// CPUs bounds a run's CPU share, in CPUs (1.5: 150 ms of CPU time per
	// 100 ms period across the run's threads): cpu.max on cgroup v2, the
	// CFS quota on v1. 0: no bound (a run may use every core). A job's
	// own CPUs may lower it. Needs the cpu controller in the runs'
	// cgroups; without it the enforcement report names the gap.
	CPUs float64
	// CPUTime is RLIMIT_CPU per process; 0 derives it from the run's
	// timeout (rounded up to whole seconds).
	CPUTime time.Duration
	// OpenFiles is RLIMIT_NOFILE, default 256.
	OpenFiles int
	// FileSizeBytes is RLIMIT_FSIZE, default 32 MiB.
	FileSizeBytes int64
	// TmpBytes sizes the /tmp tmpfs, default 64 MiB.
	TmpBytes int64
	// WorkspaceBytes sizes the /workspace tmpfs, default 64 MiB.
	WorkspaceBytes int64
	// LogsHardCap bounds the logs of a run (stdout, stderr and runtime.log
	// together); past it the run is killed and fails with
	// OUTPUT_TOO_LARGE. Default 1 MiB.
	LogsHardCap int64
	// MaxOutputBlobBytes bounds each blob a run writes, default 16 MiB.
	MaxOutputBlobBytes int64
	// MaxOutputBlobs bounds len(Job.OutputBlobIDs), default 64.
	MaxOutputBlobs int
	// MaxRunOutputBytes bounds the blobs of one run together, by their
	// files' sizes before any is read (a sparse file counts its full
	// size); past it the run fails with OUTPUT_TOO_LARGE. Default
	// DefaultMaxRunOutputBytes.
	MaxRunOutputBytes int64
	// WorkDir holds per-run host state (job inputs), default
	// os.TempDir()/skillgate-sandbox for root; for another user
	// $XDG_RUNTIME_DIR/skillgate-sandbox, else
	// os.TempDir()/skillgate-sandbox-<uid>. In root mode its parents must
	// be searchable by others: the sandboxes' uids traverse them. In
	// rootless mode it must belong to the gateway's user.
	WorkDir string
	// UIDBase is the host uid (and gid) that root inside the sandbox maps
	// to in root mode; the sandboxed code runs as UIDBase+1000. Pick a
	// range no host user or subordinate-id range owns. Default
	// 1_000_000_000. Rootless mode maps a subordinate range of the
	// gateway's user or its own uid instead (IDMap).
	UIDBase uint32
	// Environment is the base Python environment: the warm pool's
	// sandboxes are made for it (see Runner.SetWarmEnvironment). Runs of
	// another environment get a sandbox started for them.
	Environment Environment
	// MaxTemplates bounds the templates running at once, one per
	// environment in use, default 4; the least recently used idle one is
	// stopped first. Their memory counts against WarmMemoryBytes.
	MaxTemplates int
	// Template says whether sandboxes are forked from a template (a Python
	// with the runtime imported) instead of started from scratch; ""
	// means TemplateAuto.
	Template TemplateMode
	// Logger receives the runner's own events.
	Logger zerolog.Logger
}

// Fixed ids inside the sandbox.
const (
	uidMapSize      = 65536
	defaultUIDBase  = 1_000_000_000
	defaultPython   = "/usr/bin/python3"
	defaultWorkName = "skillgate-sandbox"
)

// DefaultConfig returns the defaults, with a warm pool of Workers sandboxes.
func DefaultConfig() Config {
	workers := runtime.NumCPU()
	return Config{
		Python:             defaultPython,
		Workers:            workers,
		QueueSize:          4 * workers,
		WarmPool:           workers,
		DefaultTimeout:     30 * time.Second,
		MaxTimeout:         10 * time.Minute,
		MemoryBytes:        256 << 20,
		Pids:               64,
		OpenFiles:          256,
		MaxTemplates:       4,
		FileSizeBytes:      32 << 20,
		TmpBytes:           64 << 20,
		WorkspaceBytes:     64 << 20,
		LogsHardCap:        1 << 20,
		MaxOutputBlobBytes: 16 << 20,
		MaxOutputBlobs:     64,
		MaxRunOutputBytes:  DefaultMaxRunOutputBytes,
		WorkDir:            defaultWorkDir(),
		UIDBase:            defaultUIDBase,
		Logger:             zerolog.Nop(),
	}
}

// defaultWorkDir is per user: a directory another local user created first
// is refused in rootless mode.
func defaultWorkDir() string {
	uid := os.Geteuid()
	if uid == 0 {
		return filepath.Join(os.TempDir(), defaultWorkName)
	}
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(xdg) {
		return filepath.Join(xdg, defaultWorkName)
	}
	return filepath.Join(os.TempDir(), defaultWorkName+"-"+strconv.Itoa(uid))
}

// withDefaults fills zero fields from DefaultConfig (WarmPool stays as is).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Workers == 0 {
		c.Workers = d.Workers
	}
	if c.QueueSize == 0 {
		c.QueueSize = 4 * c.Workers
	}
	setString(&c.Python, d.Python)
	setString(&c.WorkDir, d.WorkDir)
	setInt(&c.Pids, d.Pids)
	setInt(&c.OpenFiles, d.OpenFiles)
	setInt(&c.MaxTemplates, d.MaxTemplates)
	setInt(&c.MaxOutputBlobs, d.MaxOutputBlobs)
	setInt(&c.DefaultTimeout, d.DefaultTimeout)
	setInt(&c.MaxTimeout, d.MaxTimeout)
	setInt(&c.MemoryBytes, d.MemoryBytes)
	setInt(&c.FileSizeBytes, d.FileSizeBytes)
	setInt(&c.TmpBytes, d.TmpBytes)
	setInt(&c.WorkspaceBytes, d.WorkspaceBytes)
	setInt(&c.LogsHardCap, d.LogsHardCap)
	setInt(&c.MaxOutputBlobBytes, d.MaxOutputBlobBytes)
	setInt(&c.MaxRunOutputBytes, d.MaxRunOutputBytes)
	setInt(&c.UIDBase, d.UIDBase)
	return c
}

func setString(p *string, d string) {
	if *p == "" {
		*p = d
	}
}

func setInt[T int | int64 | uint32 | time.Duration](p *T, d T) {
	if *p == 0 {
		*p = d
	}
}

// Validate reports the first invalid field. Zero fields are valid: they
// mean the default.
func (c Config) Validate() error {
	c = c.withDefaults()
	if _, err := ParseMode(string(c.Mode)); err != nil {
		return err
	}
	if _, err := ParseTemplateMode(string(c.Template)); err != nil {
		return err
	}
	if _, err := ParseIDMap(string(c.IDMap)); err != nil {
		return err
	}
	if err := c.Environment.validate(); err != nil {
		return fmt.Errorf("%w: %w", errInvalidConfig, err)
	}
	for _, chk := range []struct {
		bad bool
		msg string
	}{
		{!filepath.IsAbs(c.Python), fmt.Sprintf("Python %q is not an absolute path", c.Python)},
		{!filepath.IsAbs(c.WorkDir), fmt.Sprintf("WorkDir %q is not an absolute path", c.WorkDir)},
		{c.CgroupDir != "" && !filepath.IsAbs(c.CgroupDir), fmt.Sprintf("CgroupDir %q is not an absolute path", c.CgroupDir)},
		{c.Workers < 0, "Workers is negative"},
		{c.QueueSize < 0, "QueueSize is negative"},
		{c.WarmPool < 0, "WarmPool is negative"},
		{c.WarmMemoryBytes < 0, "WarmMemoryBytes is negative"},
		{c.MaxTemplates < 0, "MaxTemplates is negative"},
		{c.DefaultTimeout < 0 || c.MaxTimeout < 0 || c.CPUTime < 0, "a timeout is negative"},
		{c.DefaultTimeout > c.MaxTimeout, "DefaultTimeout exceeds MaxTimeout"},
		{c.MemoryBytes < 32<<20, "MemoryBytes is below 32 MiB"},
		{c.Pids < 8, "Pids is below 8"},
		{!validCPUs(c.CPUs), fmt.Sprintf("CPUs %v is not 0 or between %v and %d", c.CPUs, MinCPUs, MaxCPUs)},
		{c.OpenFiles < 16, "OpenFiles is below 16"},
		{c.FileSizeBytes < 0 || c.TmpBytes < 0 || c.WorkspaceBytes < 0, "a size is negative"},
		{c.TmpBytes < 1<<20 || c.WorkspaceBytes < 1<<20, "TmpBytes and WorkspaceBytes must be at least 1 MiB"},
		{c.LogsHardCap < MaxLogsPreview, "LogsHardCap is below the logs preview size"},
		{c.MaxOutputBlobBytes < 0 || c.MaxOutputBlobs < 0 || c.MaxRunOutputBytes < 0, "an output blob limit is negative"},
		{c.UIDBase < 1 || uint64(c.UIDBase)+uidMapSize > 1<<32-1, "UIDBase leaves no room for the id map"},
	} {
		if chk.bad {
			return fmt.Errorf("%w: %s", errInvalidConfig, chk.msg)
		}
	}
	return nil
}

// The bounds of a CPU share (Config.CPUs, Job.CPUs): the kernel's smallest
// quota is 1 ms per 100 ms period, and beyond a few hundred CPUs a quota
// means nothing.
const (
	MinCPUs = 0.01
	MaxCPUs = 1024
)

// validCPUs reports whether n is 0 (no bound) or a CPU share the cgroup
// can take.
func validCPUs(n float64) bool {
	return n == 0 || n >= MinCPUs && n <= MaxCPUs
}
