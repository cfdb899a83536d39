//go:build linux && (amd64 || arm64)

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/pid1"
)

// seccompChildEnv makes this test binary, started again, install the
// sandbox's filter the way pid 1 does (pid1.InstallSeccomp, no_new_privs, on
// the thread that goes on) and exec the command in its arguments: the
// filter of a run, on the host, where the real libraries can be imported.
const seccompChildEnv = "SKILLGATE_TEST_SECCOMP_EXEC"

func init() {
	if os.Getenv(seccompChildEnv) == "" {
		return
	}
	runtime.LockOSThread()
	args := os.Args[len(os.Args)-2:] // -- and the script; python is defaultPython
	if err := pid1.InstallSeccomp(false); err != nil {
		fmt.Fprintln(os.Stderr, "seccomp child:", err)
		os.Exit(3)
	}
	err := syscall.Exec(defaultPython, []string{defaultPython, "-B", args[1]}, os.Environ())
	fmt.Fprintln(os.Stderr, "seccomp child: exec:", err)
	os.Exit(3)
}

// withEachStart runs fn with a Runner that forks sandboxes from the
// template and with one that starts them from scratch: the filter is
// installed by Python in the one and by Go's pid 1 in the other.
func withEachStart(t *testing.T, fn func(t *testing.T, r *Runner)) {
	t.Run("template", func(t *testing.T) { fn(t, sharedRunner(t)) })
	t.Run("from scratch", func(t *testing.T) {
		fn(t, ownRunner(t, func(c *Config) { c.Template = TemplateOff }))
	})
}

// TestSeccompUnlistedCallsInARun: calls the kernel has and no group lists
// answer ENOSYS inside a run, as does a number past every kernel's last
// call; under the old deny-list the first ones ran.
func TestSeccompUnlistedCallsInARun(t *testing.T) {
	calls := map[string][2]int{ // name: nr, arg0
		"io_setup":     {unix.SYS_IO_SETUP, 1},
		"landlock_abi": {unix.SYS_LANDLOCK_CREATE_RULESET, 0},
		"msgget":       {unix.SYS_MSGGET, 0},
		"get_robust":   {unix.SYS_GET_ROBUST_LIST, 0},
		"file_getattr": {unix.SYS_FILE_GETATTR, -1},
		"beyond":       {1000, 0},
		"highest":      {1<<31 - 1, 0},
	}
	code := `
import ctypes

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def main(args):
    out = {}
    for name, (nr, arg0) in sorted(args["calls"].items()):
        ctypes.set_errno(0)
        # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
        # answers the ABI version where it is allowed.
        a2 = 1 if name == "landlock_abi" else 0
        rc = libc.syscall(ctypes.c_long(nr), ctypes.c_long(arg0), ctypes.c_long(0),
                          ctypes.c_long(a2), ctypes.c_long(0), ctypes.c_long(0))
        out[name] = ctypes.get_errno() if rc < 0 else "succeeded"
    return out
`
	withEachStart(t, func(t *testing.T, r *Runner) {
		out := output(t, run(t, r, code, map[string]any{"calls": calls}))
		for name := range calls {
			assert.Equal(t, float64(unix.ENOSYS), out[name], "%s: want ENOSYS", name)
		}
	})
}

// libraryChecks are the checks of testdata/seccomp_workload.py that need
// the libraries of real skills; the others need only Python, bash and
// coreutils.
var libraryChecks = []string{"numpy", "pandas", "matplotlib", "lxml", "openpyxl", "docx", "reportlab"}

// TestSeccompRuntimeInARun runs the workload's checks of the Python
// runtime, bash and coreutils (threads, fork, exec, multiprocessing,
// asyncio, sqlite3, ssl, mmap, polling, signals, timers) in real runs.
func TestSeccompRuntimeInARun(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("testdata", "seccomp_workload.py"))
	require.NoError(t, err)
	withEachStart(t, func(t *testing.T, r *Runner) {
		res := run(t, r, string(script), map[string]any{"skip": libraryChecks}, withTimeout(2*time.Minute))
		out := output(t, res)
		require.NotEmpty(t, out)
		for name, v := range out {
			assert.Equal(t, "ok", v, name)
		}
	})
}

// TestSeccompRealLibraries runs the whole workload, the real libraries
// included, in /usr/bin/python3 on the host, under the filter of a run and
// without it: every check that passes without the filter passes under it.
// Inside a run the libraries cannot be imported yet (its /etc has no
// alternatives), hence the host; checks of libraries the host lacks are
// skipped, and the test says so.
func TestSeccompRealLibraries(t *testing.T) {
	if testing.Short() {
		t.Skip("imports numpy, pandas and matplotlib twice")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "seccomp_workload.py"))
	require.NoError(t, err)
	mpl := t.TempDir() // shared: the filtered run builds matplotlib's font cache
	workload := func(filtered bool) map[string]string {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		var cmd *exec.Cmd
		if filtered {
			cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^$", "--", script)
			cmd.Env = append(os.Environ(), seccompChildEnv+"=1")
		} else {
			cmd = exec.CommandContext(ctx, defaultPython, "-B", script)
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, "TMPDIR="+t.TempDir(), "MPLCONFIGDIR="+mpl)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		require.NoError(t, err, "filtered %v: %s", filtered, stderr.String())
		results := map[string]string{}
		lines := bufio.NewScanner(bytes.NewReader(stdout))
		for lines.Scan() {
			name, result, _ := strings.Cut(lines.Text(), " ")
			results[name] = result
		}
		return results
	}
	filtered := workload(true)
	plain := workload(false)
	require.Equal(t, "2", filtered["seccomp"], "the filtered run's seccomp mode")
	require.Equal(t, "0", plain["seccomp"], "the plain run's seccomp mode")
	delete(plain, "seccomp")
	require.NotEmpty(t, plain)
	var missing []string
	for name, result := range plain {
		if result != "ok" {
			require.Contains(t, result, "ModuleNotFoundError", "%s fails without the filter", name)
			missing = append(missing, name)
			continue
		}
		assert.Equal(t, "ok", filtered[name], "%s under the filter", name)
	}
	if len(missing) > 0 {
		t.Skipf("not importable on this host, so not checked: %v", missing)
	}
}
