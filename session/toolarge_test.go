package session

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// bigAppender is a result that writes its own JSON, n bytes of data.
type bigAppender int

func (b bigAppender) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"data":"`...)
	dst = append(dst, strings.Repeat("x", int(b))...)
	return append(dst, `"}`...)
}

// appenderHandler answers Initialize like the test handler and every other
// method with an Appender result of params.n bytes.
type appenderHandler struct{ *testHandler }

func (h appenderHandler) Handle(ctx context.Context, req *Request) (any, error) {
	if req.Method == "Initialize" {
		return h.testHandler.Handle(ctx, req)
	}
	var n struct{ N int }
	_ = json.Unmarshal(req.Params, &n)
	return bigAppender(n.N), nil
}

// A result over the message size limit is answered with
// RESPONSE_TOO_LARGE, whose details give both sizes and end with the
// configured hint, if any; results written by an Appender alike.
func TestResponseTooLargeDetails(t *testing.T) {
	const limit = 64 << 10
	for _, hint := range []string{"", "store it as a blob"} {
		f := newFixture(t, "pipe", func(c *Config) { c.TooLargeHint = hint })
		p := f.dial()
		p.initialize()
		m := p.call("Big", `{"n":100000}`)
		require.NotNil(t, m.Error)
		assert.Equal(t, transport.StringResponseTooLarge, m.Error.Data.StringCode)
		body := resultFrameLen("pt-2", 100000) - transport.FrameOverhead
		want := "the result of " + itoa(body) + " bytes exceeds the message size limit of 65536 bytes"
		if hint != "" {
			want += "; " + hint
		}
		assert.Equal(t, want, m.Error.Data.Details)
	}

	srv, err := NewServer(testConfig(), appenderHandler{newTestHandler()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	f := &fixture{t: t, srv: srv, kind: "pipe"}
	p := f.dial()
	p.initialize()
	m := p.call("Any", `{"n":100000}`)
	require.NotNil(t, m.Error)
	assert.Equal(t, transport.StringResponseTooLarge, m.Error.Data.StringCode)
	assert.Contains(t, m.Error.Data.Details, "exceeds the message size limit of 65536 bytes")
	m = p.call("Any", `{"n":`+itoa(limit/2)+`}`)
	require.Nil(t, m.Error)
	assert.Len(t, m.Result, limit/2+len(`{"data":""}`))
}
