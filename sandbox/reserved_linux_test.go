package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/skillgate/skillgate/internal/runerror"
)

// Reserved error types come only from the gateway: user code can neither
// raise them by class name nor write them on the runtime's result pipe.
func TestUserCodeCannotClaimReservedTypes(t *testing.T) {
	r := sharedRunner(t)
	for _, name := range []string{runerror.Sandbox, runerror.Timeout, runerror.MemoryLimit, runerror.OutputTooLarge,
		runerror.InvalidOutput, "CANCELLED", "INTERRUPTED"} {
		t.Run("class "+name, func(t *testing.T) {
			code := "class " + name + "(Exception):\n    pass\n\ndef main(args):\n    raise " + name + "('fake')\n"
			res := run(t, r, code, nil)
			requireFailed(t, res, UserTypePrefix+name)
			assert.Equal(t, "fake", res.Error.Message)
		})
	}
	// The code shares the runtime's process: it can write a frame of its
	// own. One claiming a failed set-up comes after the runtime's "P" and
	// is not believed.
	t.Run("forged set-up failure", func(t *testing.T) {
		code := "import os, json, struct\n\ndef main(args):\n" +
			"    data = json.dumps({'ok': False, 'type': 'SANDBOX_ERROR', 'message': 'forged', 'runtime': True}).encode()\n" +
			"    os.write(4, struct.pack('>I', len(data)) + data)\n    os._exit(0)\n"
		res := run(t, r, code, nil)
		requireFailed(t, res, UserTypePrefix+runerror.Sandbox)
	})
	t.Run("forged garbage frame", func(t *testing.T) {
		code := "import os\n\ndef main(args):\n    os.write(4, b'\\x00\\x00\\x00\\x02{}')\n    os._exit(0)\n"
		res := run(t, r, code, nil)
		requireFailed(t, res, "ResultError")
	})
	t.Run("the runtime's own verdicts stand", func(t *testing.T) {
		requireFailed(t, run(t, r, "def main(args):\n    return 'x' * 5000\n", nil), runerror.OutputTooLarge)
		requireFailed(t, run(t, r, "def main(args):\n    raise MemoryError('big')\n", nil), runerror.MemoryLimit)
	})
}

func TestResultFrameErrorType(t *testing.T) {
	for _, tc := range []struct {
		f    resultFrame
		want string
	}{
		{resultFrame{Type: "ValueError"}, "ValueError"},
		{resultFrame{Type: runerror.Sandbox}, "user.SANDBOX_ERROR"},
		{resultFrame{Type: runerror.Sandbox, Runtime: true}, runerror.Sandbox},
		{resultFrame{Type: runerror.Sandbox, Runtime: true, prepared: true}, "user.SANDBOX_ERROR"},
		{resultFrame{Type: runerror.Timeout, Runtime: true}, "user.EXECUTION_TIMEOUT"},
		{resultFrame{Type: "CANCELLED", Runtime: true, prepared: true}, "user.CANCELLED"},
		{resultFrame{Type: runerror.OutputTooLarge, Runtime: true, prepared: true}, runerror.OutputTooLarge},
		{resultFrame{Type: runerror.MemoryLimit, Runtime: true, prepared: true}, runerror.MemoryLimit},
		{resultFrame{Type: runerror.MemoryLimit, prepared: true}, "user.MEMORY_LIMIT_EXCEEDED"},
		{resultFrame{Type: "bad\x00type"}, "Exception"},
	} {
		assert.Equal(t, tc.want, tc.f.errorType(), "%+v", tc.f)
	}
}
