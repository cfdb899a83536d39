package sandbox

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/internal/runerror"
)

// TestAbuse runs hostile code; after each case the Runner must still
// work and nothing of the run may be left (processes, cgroups, dirs).
// TestAbuseLimits covers the memory and process limits.
func TestAbuse(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.CPUTime = time.Second })
	for _, tc := range []struct {
		name    string
		code    string
		timeout time.Duration
		check   func(t *testing.T, res *Result)
	}{
		{"infinite loop hits the CPU limit", "def main(args):\n    while True:\n        pass\n", 20 * time.Second,
			func(t *testing.T, res *Result) {
				requireFailed(t, res, runerror.Timeout)
				assert.Contains(t, res.Error.Message, "CPU time")
			}},
		{"sleep past the timeout", "import time\n\ndef main(args):\n    time.sleep(100)\n", time.Second,
			func(t *testing.T, res *Result) {
				requireFailed(t, res, runerror.Timeout)
				assert.Contains(t, res.Error.Message, "timeout of 1s")
				assert.GreaterOrEqual(t, res.Duration, time.Second)
			}},
		{"SIGXCPU ignored", "import signal\n\ndef main(args):\n    signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n    while True:\n        pass\n", 20 * time.Second,
			func(t *testing.T, res *Result) { requireFailed(t, res, runerror.Timeout) }},
		{"stdout flood", "def main(args):\n    while True:\n        print('x' * 1000)\n", 20 * time.Second,
			func(t *testing.T, res *Result) {
				requireFailed(t, res, runerror.OutputTooLarge)
				assert.LessOrEqual(t, len(res.Logs), MaxLogsPreview)
			}},
		{"stderr flood without newlines", "import os\n\ndef main(args):\n    while True:\n        os.write(2, b'y' * 65536)\n", 20 * time.Second,
			func(t *testing.T, res *Result) { requireFailed(t, res, runerror.OutputTooLarge) }},
		{"disk fill", diskFill, 20 * time.Second,
			func(t *testing.T, res *Result) {
				out := output(t, res)
				for _, dir := range []string{"/workspace", "/tmp"} {
					got := out[dir].([]any)
					assert.Equal(t, float64(unix.ENOSPC), got[1], dir)
					assert.LessOrEqual(t, got[0], float64(8<<20), dir)
				}
				assert.Equal(t, float64(unix.EFBIG), out["big_file"].([]any)[1], "RLIMIT_FSIZE")
			}},
		{"file descriptors", "def main(args):\n    fs = []\n    try:\n        while True:\n            fs.append(open('/dev/null'))\n    except OSError as e:\n        return [len(fs), e.errno]\n", 20 * time.Second,
			func(t *testing.T, res *Result) {
				requireCompleted(t, res)
				var got []int
				require.NoError(t, json.Unmarshal(res.Output, &got))
				assert.Equal(t, int(unix.EMFILE), got[1])
				assert.Less(t, got[0], 256, "RLIMIT_NOFILE")
			}},
		{"background daemon", daemon, 5 * time.Second,
			func(t *testing.T, res *Result) { requireCompleted(t, res) }},
		{"forged result frame", "import os\n\ndef main(args):\n    os.write(4, b'\\xff\\xff\\xff\\xff garbage')\n    return 1\n", 5 * time.Second,
			func(t *testing.T, res *Result) { assert.Equal(t, StatusFailed, res.Status) }},
		{"result pipe closed", "import os, time\n\ndef main(args):\n    os.close(4)\n    return 1\n", 5 * time.Second,
			func(t *testing.T, res *Result) { assert.Equal(t, StatusFailed, res.Status) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, r, tc.code, nil, withTimeout(tc.timeout))
			tc.check(t, res)
			assertHealthyAndClean(t, r)
		})
	}
}

// TestAbuseLimits hits the memory and process limits with each mechanism
// this process can use: a cgroup where one is writable, and rlimits
// always (as root too, where they are forced), since rootless gateways
// without a delegated cgroup depend on them.
func TestAbuseLimits(t *testing.T) {
	for _, rlimits := range []bool{false, true} {
		r := hookedRunner(t, testHooks{forceRlimits: rlimits}, nil)
		if !rlimits && r.cgroups == nil {
			continue // no cgroup here: the second round covers rlimits
		}
		name := "rlimits"
		if r.cgroups != nil {
			// A delegated cgroup may lack a controller: rlimits then
			// stand in for its limit.
			name = "cgroup with rlimits for " + strings.Join(r.cgroups.Missing(), ", ")
		}
		t.Run(name, func(t *testing.T) {
			t.Run("processes and threads counted", func(t *testing.T) {
				out := output(t, run(t, r, countForksAndThreads, nil))
				for _, k := range []string{"processes", "threads"} {
					assert.Less(t, out[k], float64(r.cfg.Pids), k)
					assert.Greater(t, out[k], 8.0, k)
				}
				assertHealthyAndClean(t, r)
			})
			for _, tc := range []struct {
				name, code, want string
				timeout          time.Duration
			}{
				{"fork bomb", forkBomb, runerror.Timeout, 2 * time.Second},
				{"thread bomb", threadBomb, "RuntimeError", 10 * time.Second},
				{"memory bomb", "def main(args):\n    hog = []\n    while True:\n        hog.append(b'x' * (8 << 20))\n", runerror.MemoryLimit, 20 * time.Second},
				{"memory bomb in a child", childMemoryBomb, "", 20 * time.Second},
			} {
				t.Run(tc.name, func(t *testing.T) {
					res := run(t, r, tc.code, nil, withTimeout(tc.timeout))
					if tc.want == "" {
						out := output(t, res)
						assert.NotEqual(t, 0.0, out["status"], "the child was stopped: %v", out)
					} else {
						requireFailed(t, res, tc.want)
					}
					assertHealthyAndClean(t, r)
				})
			}
		})
	}
}

// countForksAndThreads starts processes, then threads, until the limit
// refuses one, and reports how many it got.
const countForksAndThreads = `
import os, signal, threading, time

def main(args):
    children = []
    try:
        while len(children) < 1000:
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            children.append(pid)
    except OSError:
        pass
    for pid in children:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    threads = 0
    try:
        while threads < 1000:
            threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
            threads += 1
    except RuntimeError:
        pass
    return {"processes": len(children), "threads": threads}
`

// childMemoryBomb exhausts memory in a forked child: the parent survives
// to report how the child ended (killed by the cgroup, or MemoryError).
const childMemoryBomb = `
import os

def main(args):
    pid = os.fork()
    if pid == 0:
        hog = []
        try:
            while True:
                hog.append(b'x' * (8 << 20))
        except MemoryError:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    return {"status": status}
`

const forkBomb = `
import os, time

def main(args):
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.01)
`

const threadBomb = `
import threading, time

def main(args):
    while True:
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
`

const diskFill = `
import errno

import os

def fill(path, files=100, chunk=1 << 20):
    n = 0
    try:
        for i in range(files):
            with open("%s.%d" % (path, i), "wb") as f:
                for _ in range(2):  # files below RLIMIT_FSIZE
                    f.write(b"\0" * chunk)
                    f.flush()
                    n += chunk
    except OSError as e:
        return [n, e.errno]

def main(args):
    out = {"/workspace": fill("/workspace/fill"), "/tmp": fill("/tmp/fill")}
    for name in os.listdir("/tmp"):
        os.remove("/tmp/" + name)
    out["big_file"] = fill("/tmp/big", files=1, chunk=5 << 20)
    return out
`

// daemon double-forks a session leader that would outlive the run.
const daemon = `
import os, time

def main(args):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(60)
        os._exit(0)
    os.wait()
    return "left a daemon behind"
`

// TestAbuseBlobTricks plants links and special files where the gateway
// reads output blobs: the gateway must neither follow nor hang.
func TestAbuseBlobTricks(t *testing.T) {
	r := ownRunner(t, nil)
	for _, tc := range []struct{ name, code string }{
		{"symlink to a host file", "os.remove('/workspace/.blobs/0')\n    os.symlink('/etc/passwd', '/workspace/.blobs/0')"},
		{"symlink through proc", "os.remove('/workspace/.blobs/0')\n    os.symlink('/proc/1/root/etc/shadow', '/workspace/.blobs/0')"},
		{"relative symlink escaping", "os.remove('/workspace/.blobs/0')\n    os.symlink('../../../../etc/shadow', '/workspace/.blobs/0')"},
		{"blob dir replaced by a symlink", "os.rename('/workspace/.blobs', '/workspace/old')\n    os.symlink('/etc', '/workspace/.blobs')"},
		{"fifo", "os.remove('/workspace/.blobs/0')\n    os.mkfifo('/workspace/.blobs/0')"},
		{"directory", "os.remove('/workspace/.blobs/0')\n    os.mkdir('/workspace/.blobs/0')"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := "import os\nfrom runtime import blobs\n\ndef main(args):\n    blobs.write_text('fine')\n    " + tc.code + "\n    return 'done'\n"
			res := run(t, r, code, nil, func(j *Job) { j.OutputBlobIDs = []string{"blob:out"} })
			requireFailed(t, res, "BlobError")
			assert.Empty(t, res.OutputBlobs)
			assert.NotContains(t, res.Error.Message, "root:")
			assertHealthyAndClean(t, r)
		})
	}
}

// TestAbuseManyRunsLeaveNothing checks the steady state: a burst of runs
// through the warm pool leaves no process, cgroup or directory behind.
func TestAbuseManyRunsLeaveNothing(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.WarmPool = 2 })
	for range 10 {
		res := run(t, r, "import os\n\ndef main(args):\n    os.fork() or os._exit(0)\n    return 1\n", nil)
		requireCompleted(t, res)
	}
	waitIdle(t, r)
	require.Eventually(t, func() bool { return r.Stats().WarmReady == 2 }, 30*time.Second, 10*time.Millisecond)
	// Two warm sandboxes: two pid 1s and two Pythons, nothing else.
	procs := runnerProcesses(r.name)
	assert.Len(t, procs, 4, strings.Join(procs, "\n"))
}
