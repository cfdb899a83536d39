package pid1

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// rtSigaction sets (act) and reads (old) a signal's disposition as the
// kernel holds it.
func rtSigaction(t *testing.T, sig int, act, old *kernelSigaction) {
	t.Helper()
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(act)),
		uintptr(unsafe.Pointer(old)), unsafe.Sizeof(kernelSigaction{}.mask), 0, 0)
	require.Zero(t, errno, "rt_sigaction %d", sig)
}

// Every signal the gateway was started with ignored, from 1 to 64, gets
// its default disposition back, so Python does not inherit it through
// execve; a signal with a handler is left alone.
func TestResetIgnoredSignals(t *testing.T) {
	ignored := []int{int(unix.SIGHUP), int(unix.SIGUSR2), int(unix.SIGCHLD), 34, 64}
	for _, sig := range ignored {
		var old kernelSigaction
		rtSigaction(t, sig, &kernelSigaction{handler: sigIgn}, &old)
		t.Cleanup(func() { rtSigaction(t, sig, &old, nil) })
	}
	var handled kernelSigaction
	rtSigaction(t, int(unix.SIGURG), nil, &handled) // the Go runtime's preemption signal
	require.NotZero(t, handled.handler)

	resetIgnoredSignals()

	for _, sig := range ignored {
		var now kernelSigaction
		rtSigaction(t, sig, nil, &now)
		assert.Zero(t, now.handler, "signal %d has its default disposition", sig)
	}
	var after kernelSigaction
	rtSigaction(t, int(unix.SIGURG), nil, &after)
	assert.Equal(t, handled.handler, after.handler, "a handled signal keeps its handler")
}

// limitPython sets RLIMIT_DATA to the memory limit, RLIMIT_AS to four
// times it and RLIMIT_NPROC to the process limit, soft and hard alike, on
// the process it is given; a limit of 0 leaves that rlimit as it was.
func TestLimitPython(t *testing.T) {
	start := func() int {
		cmd := exec.Command("sleep", "30")
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		return cmd.Process.Pid
	}
	get := func(pid, res int) unix.Rlimit {
		var l unix.Rlimit
		require.NoError(t, unix.Prlimit(pid, res, nil, &l))
		return l
	}

	pid := start()
	require.NoError(t, limitPython(pid, &wire.InitConfig{RlimitMemory: 64 << 20, RlimitProcs: 42}))
	assert.Equal(t, unix.Rlimit{Cur: 64 << 20, Max: 64 << 20}, get(pid, unix.RLIMIT_DATA))
	assert.Equal(t, unix.Rlimit{Cur: 256 << 20, Max: 256 << 20}, get(pid, unix.RLIMIT_AS))
	assert.Equal(t, unix.Rlimit{Cur: 42, Max: 42}, get(pid, unix.RLIMIT_NPROC))

	pid = start()
	before := map[int]unix.Rlimit{}
	for _, res := range []int{unix.RLIMIT_DATA, unix.RLIMIT_AS, unix.RLIMIT_NPROC} {
		before[res] = get(pid, res)
	}
	require.NoError(t, limitPython(pid, &wire.InitConfig{}))
	for res, l := range before {
		assert.Equal(t, l, get(pid, res), "rlimit %d untouched", res)
	}

	err := limitPython(1<<22+1, &wire.InitConfig{RlimitProcs: 1}) // above any pid_max: no such process
	assert.ErrorContains(t, err, "prlimit")
}

const setgroupsChildEnv = "PID1_TEST_SETGROUPS_CHILD"

// In a user namespace whose creator denied setgroups (an unprivileged
// one), SetgroupsDenied says so; in the initial namespace it does not.
func TestSetgroupsDenied(t *testing.T) {
	if os.Getenv(setgroupsChildEnv) != "" {
		if SetgroupsDenied() {
			os.Stdout.WriteString("denied\n")
		} else {
			os.Stdout.WriteString("allowed\n")
		}
		return
	}
	assert.False(t, SetgroupsDenied(), "the initial user namespace allows setgroups")

	out := inOwnNamespaces(t, "TestSetgroupsDenied", setgroupsChildEnv, "1", 0)
	assert.True(t, strings.HasPrefix(string(out), "denied\n"), "%q", out)
}
