package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/sandbox/internal/pid1"
	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// holdCode, appended to a run's code, makes hold() report that the run
// holds what it made (/workspace/ready) and wait for the host's SIGUSR1.
const holdCode = `
import os, signal, time

_released = []

def hold():
    signal.signal(signal.SIGUSR1, lambda *_: _released.append(1))
    open("/workspace/ready", "w").close()
    for _ in range(1200):
        if _released:
            return
        time.sleep(0.05)
`

// holding is a run started by startHolding.
type holding struct {
	pid  int // the run's Python, on the host
	done chan *Result
}

// startHolding starts code (which calls hold()) and returns once it holds
// what it made.
func startHolding(t *testing.T, r *Runner, code string) *holding {
	t.Helper()
	h := &holding{done: make(chan *Result, 1)}
	go func() {
		res, err := r.Run(context.Background(), Job{RunID: t.Name(), Code: holdCode + code, Timeout: 60 * time.Second})
		if err != nil {
			res = failed(runerror.Sandbox, err.Error())
		}
		h.done <- res
	}()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, pid := range runnerPythons(r.name) {
			dir := filepath.Join("/proc", strconv.Itoa(pid))
			status, _ := os.ReadFile(filepath.Join(dir, "status"))
			parent, _ := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(statusLine(string(status), "PPid:")), "cmdline"))
			if !strings.Contains(string(parent), wire.InitVerb) {
				continue // not the run's Python, the child of its pid 1
			}
			if _, err := os.Stat(filepath.Join(dir, "root", "workspace", "ready")); err == nil {
				h.pid = pid
				return h
			}
		}
		select {
		case res := <-h.done:
			t.Fatalf("the holding run ended early: %+v\n%s", res.Error, res.Logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("the holding run never got ready")
	return nil
}

// release lets the run return and waits for its result.
func (h *holding) release(t *testing.T) *Result {
	t.Helper()
	_ = syscall.Kill(h.pid, syscall.SIGUSR1)
	return <-h.done
}

func statusLine(status, key string) string {
	for line := range strings.Lines(status) {
		if v, ok := strings.CutPrefix(line, key); ok {
			return v
		}
	}
	return ""
}

// countedCode makes inotify instances and queues real-time signals until
// refused or at a bound well above the run's limits (and well below the
// host's, so that a gateway without those limits leaves the host's
// counts intact), then reports how far it got.
const countedCode = `
import ctypes, errno, os, signal

def counted():
    libc = ctypes.CDLL(None, use_errno=True)
    fds, err = [], 0
    for _ in range(20):
        fd = libc.inotify_init1(0)
        if fd < 0:
            err = ctypes.get_errno()
            break
        fds.append(fd)
    sig = signal.SIGRTMIN
    signal.pthread_sigmask(signal.SIG_BLOCK, {sig})
    for _ in range(256):
        os.kill(os.getpid(), sig)  # past the limit the kernel drops it
    with open("/proc/self/status") as f:
        sigq = [l.split()[1] for l in f if l.startswith("SigQ:")][0]
    return {"inotify": len(fds), "inotify_errno": errno.errorcode.get(err, str(err)),
            "sigq_queued": int(sigq.split("/")[0]), "_fds": fds}
`

// TestRunsHaveTheirOwnUserCounts has a run take as many inotify instances
// and pending signals as it may and hold them: it stops at its own small
// limits, while the host and a second run still get theirs. The counts
// are per user namespace and uid, charged up to the host user that made
// the first namespace (root, in root mode).
func TestRunsHaveTheirOwnUserCounts(t *testing.T) {
	for _, m := range []TemplateMode{TemplateOn, TemplateOff} {
		t.Run(string(m), func(t *testing.T) {
			r := ownRunner(t, func(c *Config) { c.Template = m })
			first := startHolding(t, r, countedCode+`
def main(args):
    out = counted()
    hold()
    del out["_fds"]
    return out
`)
			fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
			require.NoError(t, err, "the host's inotify while a run holds all it may")
			_ = unix.Close(fd)
			second := run(t, r, countedCode+`
def main(args):
    out = counted()
    del out["_fds"]
    return out
`, nil)
			limits := map[string]any{"inotify": float64(8), "inotify_errno": "EMFILE", "sigq_queued": float64(pid1.RunSigPending)}
			assert.Equal(t, limits, output(t, second), "a second run, while the first holds its own")
			assert.Equal(t, limits, output(t, first.release(t)), "the first run")
		})
	}
}

// TestTemplateRunsHaveTheirOwnProcessLimit: without a pids cgroup
// RLIMIT_NPROC bounds a run's processes, and the kernel counts them per
// uid of a user namespace. A run that forks up to its limit and holds its
// processes must leave another run of the same template free to fork.
func TestTemplateRunsHaveTheirOwnProcessLimit(t *testing.T) {
	r := hookedRunner(t, testHooks{forceRlimits: true}, func(c *Config) { c.Template = TemplateOn })
	require.True(t, r.UsesTemplate())
	forks := `
import os

def fork_all(n):
    rd, wr = os.pipe()
    kids = 0
    for _ in range(n):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.close(wr)
            os.read(rd, 1)  # until the parent is gone
            os._exit(0)
        kids += 1
    return kids, wr
`
	first := startHolding(t, r, forks+`
def main(args):
    kids, wr = fork_all(`+strconv.Itoa(r.cfg.Pids+16)+`)
    hold()
    return {"kids": kids}
`)
	second := output(t, run(t, r, forks+`
def main(args):
    kids, wr = fork_all(4)
    return {"kids": kids}
`, nil))
	assert.Equal(t, float64(4), second["kids"], "a second run forks while the first holds its limit")
	held := output(t, first.release(t))["kids"].(float64)
	assert.Less(t, held, float64(r.cfg.Pids), "the first run stopped at its limit")
	assert.Greater(t, held, float64(r.cfg.Pids/2), "the first run forked up to its limit")
}
