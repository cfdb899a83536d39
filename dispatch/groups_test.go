package dispatch

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/transport"
)

// A group's error table maps the errors of its own methods only: the
// run methods answer RUN_NOT_FOUND for an unknown run, while a method
// registered on its own that returns the same sentinel error answers
// INTERNAL_ERROR. Access errors apply to every method.
func TestErrorTablesBelongToTheirGroup(t *testing.T) {
	e, _ := newExecEnv(t, func(sandbox.Job) (*sandbox.Result, error) { return nil, sandbox.ErrOverloaded })
	e.d.Register("test_lone", nil, func(context.Context, *Call) (any, error) { return nil, runs.ErrNotFound })
	c := e.framed()
	_, err := c.Call(t.Context(), "get_run", map[string]any{"run_id": "run_0123456789abcdef"})
	assert.Equal(t, StringRunNotFound, stringCode(err))
	_, err = c.Call(t.Context(), "run_code", map[string]any{"language": "python", "code": "def main(a): pass"})
	assert.Equal(t, transport.StringOverloaded, stringCode(err))
	_, err = c.Call(t.Context(), "test_lone", nil)
	assert.Equal(t, transport.StringInternalError, stringCode(err))
	_, err = c.Call(t.Context(), "read_blob", map[string]any{"blob_id": "blob:0123456789abcdef0123456789abcdef"})
	assert.Equal(t, StringBlobNotFound, stringCode(err))
}
