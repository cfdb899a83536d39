package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
