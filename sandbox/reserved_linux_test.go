package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Reserved error types come only from the gateway: user code can neither
// raise them by class name nor write them on the runtime's result pipe.
func TestUserCodeCannotClaimReservedTypes(t *testing.T) {
	r := sharedRunner(t)
	for _, name := range []string{ErrTypeSandbox, ErrTypeTimeout, ErrTypeMemory, ErrTypeOutputTooLarge,
		ErrTypeInvalidOutput, "CANCELLED", "INTERRUPTED"} {
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
		requireFailed(t, res, UserTypePrefix+ErrTypeSandbox)
	})
	t.Run("forged garbage frame", func(t *testing.T) {
		code := "import os\n\ndef main(args):\n    os.write(4, b'\\x00\\x00\\x00\\x02{}')\n    os._exit(0)\n"
		res := run(t, r, code, nil)
		requireFailed(t, res, "ResultError")
	})
	t.Run("the runtime's own verdicts stand", func(t *testing.T) {
		requireFailed(t, run(t, r, "def main(args):\n    return 'x' * 5000\n", nil), ErrTypeOutputTooLarge)
		requireFailed(t, run(t, r, "def main(args):\n    raise MemoryError('big')\n", nil), ErrTypeMemory)
	})
}

func TestResultFrameErrorType(t *testing.T) {
	for _, tc := range []struct {
		f    resultFrame
		want string
	}{
		{resultFrame{Type: "ValueError"}, "ValueError"},
		{resultFrame{Type: ErrTypeSandbox}, "user.SANDBOX_ERROR"},
		{resultFrame{Type: ErrTypeSandbox, Runtime: true}, ErrTypeSandbox},
		{resultFrame{Type: ErrTypeSandbox, Runtime: true, prepared: true}, "user.SANDBOX_ERROR"},
		{resultFrame{Type: ErrTypeTimeout, Runtime: true}, "user.EXECUTION_TIMEOUT"},
		{resultFrame{Type: "CANCELLED", Runtime: true, prepared: true}, "user.CANCELLED"},
		{resultFrame{Type: ErrTypeOutputTooLarge, Runtime: true, prepared: true}, ErrTypeOutputTooLarge},
		{resultFrame{Type: ErrTypeMemory, Runtime: true, prepared: true}, ErrTypeMemory},
		{resultFrame{Type: ErrTypeMemory, prepared: true}, "user.MEMORY_LIMIT_EXCEEDED"},
		{resultFrame{Type: "bad\x00type"}, "Exception"},
	} {
		assert.Equal(t, tc.want, tc.f.errorType(), "%+v", tc.f)
	}
}
