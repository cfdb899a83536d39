// Package wire is what the gateway and a sandbox's pid 1 agree on: the
// verb that makes the binary pid 1, the descriptors pid 1 starts with,
// the config frame the gateway sends it and the status events it answers,
// and the layout inside the sandbox that both sides name (paths, uid,
// environment). It is small and imports nothing of the module, so that
// the gateway side (package sandbox) and pid 1 (package pid1) each depend
// on it and never on one another's internals.
package wire

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"golang.org/x/sys/unix"
)

// InitVerb is os.Args[1] of a sandbox's pid 1 started from scratch: the
// gateway binary re-executed, which sandbox.MaybeInit hands to pid1.Main.
const InitVerb = "__skillgate_sandbox_init__"

// File descriptors of the sandbox's pid 1 (after stdin, stdout, stderr;
// stderr is the status pipe too, so a crash report reaches the host).
const (
	FDCtl    = 3 // host -> init: one length-prefixed InitConfig, then EOF = die
	FDStatus = 4 // init -> host: JSON lines (Status)
	FDStdout = 5 // stdout of Python
	FDJob    = 6 // host -> Python: the job (jobMessage), then EOF
	FDResult = 7 // Python -> host: readyByte, preparedByte, then one resultFrame
	FDStderr = 8 // stderr of Python
	FDEgress = 9 // init -> host (runs with network): the proxy listener's fd
)

// MaxCtlFrame bounds the config frame the gateway sends pid 1.
const MaxCtlFrame = 1 << 20

// InitConfig is what the gateway tells the sandbox's pid 1: one frame on
// FDCtl (WriteFrame, ReadFrame).
type InitConfig struct {
	RootDir string `json:"root_dir"` // host dir the new root is mounted on (a template's sandboxes use one of its own)
	JobDir  string `json:"job_dir"`  // host dir bound read-only at /job
	LibDir  string `json:"lib_dir"`  // host dir bound read-only at /opt/skillgate
	EtcDir  string `json:"etc_dir"`  // host dir bound read-only at /etc (systemview.go)
	// EnvDirs are the run's Python environments, mounted read-only under
	// EnvMount (by name): the detached mounts EnvFDs, or bound by path
	// when there are none (see Environment.detach).
	EnvDirs        []string `json:"env_dirs,omitempty"`
	EnvFDs         []int    `json:"env_fds,omitempty"`
	Python         string   `json:"python"`
	TmpBytes       int64    `json:"tmp_bytes"`
	WorkspaceBytes int64    `json:"workspace_bytes"`
	OpenFiles      int      `json:"open_files"`
	FileSizeBytes  int64    `json:"file_size_bytes"`
	CPUSeconds     int64    `json:"cpu_seconds"` // hard RLIMIT_CPU until the job lowers it
	// Without a cgroup: RLIMIT_AS/RLIMIT_DATA and RLIMIT_NPROC of Python.
	RlimitMemory int64 `json:"rlimit_memory,omitempty"`
	RlimitProcs  int   `json:"rlimit_procs,omitempty"`
	// Network brings loopback up and hands the host a listener on
	// 127.0.0.1:EgressPort over FDEgress.
	Network bool `json:"network,omitempty"`
}

// Status events of pid 1.
const (
	EvError   = "error"   // set-up failed; pid 1 exits
	EvSpawned = "spawned" // Python started (Landlock says which ABI was enforced)
	EvExit    = "exit"    // Python exited
)

// Status is one line pid 1 writes on FDStatus (JSON).
type Status struct {
	Ev       string `json:"ev"`
	Msg      string `json:"msg,omitempty"`
	Code     int    `json:"code,omitempty"`
	Signal   int    `json:"signal,omitempty"`
	CPUMilli int64  `json:"cpu_ms,omitempty"`
	Landlock int    `json:"landlock,omitempty"`
	Pid      int    `json:"pid,omitempty"` // a template's pid 1, as a host pid
	// Stamps are the spawned event's phase stamps, from phaseEntered on
	// (CLOCK_MONOTONIC ns).
	Stamps []int64 `json:"t,omitempty"`
}

// WriteFrame writes a big-endian uint32 length and the JSON of v.
func WriteFrame(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	buf := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(data)), uint32(len(data)))
	_, err = w.Write(append(buf, data...))
	return err
}

// ReadFrame reads one frame of at most limit bytes into v.
func ReadFrame(r io.Reader, limit int, v any) error {
	data, err := ReadRawFrame(r, limit)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode frame: %w", err)
	}
	return nil
}

// ReadRawFrame reads one frame of at most limit bytes.
func ReadRawFrame(r io.Reader, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("read frame header: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if int64(n) > int64(limit) {
		return nil, fmt.Errorf("frame of %d bytes exceeds %d", n, limit)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("read frame body: %w", err)
	}
	return data, nil
}

// Paths inside the sandbox.
const (
	LibMount      = "/opt/skillgate"
	BootScript    = LibMount + "/runtime/_boot.py"
	WorkspacePath = "/workspace"
	Hostname      = "sandbox"
)

// SandboxEnv is the job's environment (before Job.Env): nothing of the
// gateway's.
var SandboxEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=" + WorkspacePath,
	"LANG=C.UTF-8",
	"TMPDIR=/tmp",
	"PYTHONDONTWRITEBYTECODE=1",
}

// Paths inside the sandbox. The job directory is bound read-only at /job.
const (
	JobMount = "/job"
	// SkillsMount is where a run finds every mounted skill's files
	// (/skills/<name>/): a symlink to the job's skills directory.
	SkillsMount  = "/skills"
	SkillsTarget = JobMount + "/" + SkillsDir
	// BlobsMount holds every input blob as a file (inputBlobFile): a
	// symlink to the job's blobs directory.
	BlobsMount    = "/blobs"
	BlobsTarget   = JobMount + "/" + InputBlobsDir
	SkillsDir     = "skills"
	InputBlobsDir = "blobs"
)

// EnvMount holds a run's Python environments, one read-only directory
// each, named after the host directory (a content address): the same
// environment lies at the same path in every run, whatever it is combined
// with. The template binds them at the same place in its own mount
// namespace, so what it preloads has the paths it has in a run.
const EnvMount = "/opt/env"

// SandboxUID is the uid (and gid) the job runs as inside the sandbox.
const SandboxUID = 1000

// UsrSiblings are the host directories next to /usr, which a merged-/usr
// system has as symlinks; a split system has them as directories, which
// are bound read-only.
var UsrSiblings = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// MonotonicNow is CLOCK_MONOTONIC in ns, which every namespace shares:
// pid 1 stamps its phases with it, and the gateway compares them with its
// own.
func MonotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// EgressPort is the egress proxy's port on the loopback of a sandbox with
// network (sandbox.EgressPort).
const EgressPort = 3128
