package sandbox

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// A Python process that ends without a result is explained from what pid
// 1 reports of its end, on both paths (a template's process and one
// started from scratch): its exit status, or the signal that killed it,
// which is no CPU timeout when it used almost no CPU time.
func TestExitWithoutResultOnBothPaths(t *testing.T) {
	for _, mode := range []TemplateMode{TemplateOn, TemplateOff} {
		t.Run(string(mode), func(t *testing.T) {
			r := ownRunner(t, func(c *Config) { c.Template = mode })
			res := run(t, r, "import os\n\ndef main(args):\n    os._exit(3)\n", nil)
			requireFailed(t, res, "SystemExit")
			assert.Equal(t, "the process exited with status 3 before returning a result", res.Error.Message)

			res = run(t, r, "import os, signal\n\ndef main(args):\n    os.kill(os.getpid(), signal.SIGKILL)\n", nil)
			requireFailed(t, res, "SystemExit")
			assert.Equal(t, "the process was killed by signal 9 (killed) before returning a result", res.Error.Message)
		})
	}
}

// When pid 1 ends without reporting the process's end, the run's error
// carries what pid 1 wrote that was no status event, if anything.
func TestUnexpectedEndCarriesPid1sWords(t *testing.T) {
	sb := &sandbox{status: &statusLog{}}
	assert.Empty(t, sb.rawStatus(), "nothing written, nothing added")
	sb.status.raw.WriteString("pid 1: mount /proc: permission denied\n")
	assert.Equal(t, ": pid 1: mount /proc: permission denied\n", sb.rawStatus())
}

// A SIGKILL is the CPU limit's when the process used its whole CPU time,
// to the millisecond, and no sooner; SIGXCPU always is.
func TestFromExitCPUTimeBound(t *testing.T) {
	killed := func(milli int64) *Result {
		return fromExit(&wire.Status{Signal: int(syscall.SIGKILL), CPUMilli: milli}, 2)
	}
	assert.Equal(t, runerror.Timeout, killed(2000).Error.Type, "exactly the limit")
	assert.Equal(t, "the run exceeded its CPU time limit of 2s and was killed", killed(2000).Error.Message)
	assert.Equal(t, "SystemExit", killed(1999).Error.Type, "a millisecond short: another SIGKILL")
	assert.Equal(t, runerror.Timeout, fromExit(&wire.Status{Signal: int(syscall.SIGXCPU)}, 2).Error.Type)
}
