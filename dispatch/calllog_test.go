package dispatch

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/internal/testlog"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/transport"
)

// An unknown method's name is quoted whole in the details up to 128
// bytes; a longer one is cut at 128 bytes and marked.
func TestUnknownMethodNameQuotedUpTo128(t *testing.T) {
	e := newEnv(t, examplesDir())
	at := strings.Repeat("m", 128)
	over := strings.Repeat("n", 128) + "X"
	for _, c := range e.fronts() {
		_, err := c.call(at, `{}`)
		require.NotNil(t, err, c.name())
		assert.Equal(t, transport.StringMethodNotFound, err.EffectiveCode())
		assert.Contains(t, err.Details, `"`+at+`"`, "%s: 128 bytes are quoted whole", c.name())
		assert.NotContains(t, err.Details, "…", c.name())

		_, err = c.call(over, `{}`)
		require.NotNil(t, err, c.name())
		assert.Contains(t, err.Details, `"`+strings.Repeat("n", 128)+`…"`, "%s: cut at 128 bytes", c.name())
		assert.NotContains(t, err.Details, "X", c.name())
	}
}

// logLine is the part of a "call failed" log line the tests look at.
type logLine struct {
	Level      string `json:"level"`
	Message    string `json:"message"`
	Method     string `json:"method"`
	StringCode string `json:"string_code"`
	Cause      string `json:"cause"`
}

func failedCalls(t *testing.T, logs string) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var ll logLine
		require.NoError(t, json.Unmarshal([]byte(l), &ll), l)
		if ll.Message == "call failed" {
			out = append(out, ll)
		}
	}
	return out
}

// A call that fails inside the gateway is logged at error level with its
// cause (the client only sees INTERNAL_ERROR); a call the client got
// wrong is logged at debug level without one.
func TestFailedCallLogLevels(t *testing.T) {
	var logs testlog.Buffer
	e := newEnvOpts(t, examplesDir(), 256<<10, func(o *Options) {
		o.Logger = zerolog.New(&logs)
		o.Runner = &fakeRunner{result: func(sandbox.Job) (*sandbox.Result, error) {
			return nil, errors.New("disk on fire")
		}}
	})
	c := e.httpFront("")
	_, werr := c.call("run_code", `{"language":"python","code":"def main(a): pass"}`)
	require.NotNil(t, werr)
	require.Equal(t, transport.StringInternalError, werr.EffectiveCode())
	assert.NotContains(t, werr.Details, "disk on fire", "the cause stays in the log")

	_, werr = c.call("read_blob", `{}`)
	require.NotNil(t, werr)
	require.Equal(t, transport.StringInvalidParams, werr.EffectiveCode())

	lines := failedCalls(t, logs.String())
	require.Len(t, lines, 2, logs.String())
	assert.Equal(t, logLine{Level: "error", Message: "call failed", Method: "run_code",
		StringCode: transport.StringInternalError, Cause: "disk on fire"}, lines[0])
	assert.Equal(t, logLine{Level: "debug", Message: "call failed", Method: "read_blob",
		StringCode: transport.StringInvalidParams}, lines[1])
}
