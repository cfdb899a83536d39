package dispatch

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/internal/testlog"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
)

// Issue 9, item 16: protocol_version is "<major>.<minor>" in digits
// exactly; anything else is invalid params, another major version is
// VERSION_INCOMPATIBLE.
func TestInitializeVersionFormat(t *testing.T) {
	e := newEnv(t, "")
	for version, code := range map[string]string{
		"1.0":          "",
		"1.12":         "",
		"1.123456789":  "", // nine digits: the most a part may have
		"1.1234567890": transport.StringInvalidParams,
		"0000000001.0": transport.StringInvalidParams,
		"1":            transport.StringInvalidParams,
		"1.":           transport.StringInvalidParams,
		".1":           transport.StringInvalidParams,
		"1.0.0":        transport.StringInvalidParams,
		"1.x":          transport.StringInvalidParams,
		" 1.0":         transport.StringInvalidParams,
		"1.0 ":         transport.StringInvalidParams,
		"+1.0":         transport.StringInvalidParams,
		"":             transport.StringInvalidParams,
		"2.0":          StringVersionIncompatible,
		"0.9":          StringVersionIncompatible,
	} {
		_, err := e.framedRaw().Call(t.Context(), MethodInitialize, map[string]string{"protocol_version": version})
		assert.Equal(t, code, stringCode(err), "%q", version)
	}
}

// Issue 9, item 16: a client's name and version are cut in the logs: a
// name as large as a message allows is logged once, cut.
func TestInitializeLogsClientNamesCut(t *testing.T) {
	var logs testlog.Buffer
	e := newEnvOpts(t, "", 1<<20, func(o *Options) { o.Logger = zerolog.New(&logs) })
	name := strings.Repeat("n", testMaxMessage/3)
	_, err := e.framedRaw().Call(t.Context(), MethodInitialize,
		map[string]any{"protocol_version": "1.0", "client": map[string]string{"name": name, "version": name}})
	require.NoError(t, err)
	out := logs.String()
	assert.Less(t, len(out), 4<<10, "the log line carries the whole name")
	assert.Equal(t, 2, strings.Count(out, strings.Repeat("n", maxLoggedName)), "name and version, once each")
	assert.Contains(t, out, "["+strconv.Itoa(len(name))+" bytes]")
}

// Issue 9, item 15: Initialize lists only the methods the identity may
// call, under both spellings, and advertises the limits a client would
// otherwise learn by failing.
func TestInitializeMethodsAndLimits(t *testing.T) {
	a := newAuthEnv(t)
	limits := Limits{MaxMessageSize: testMaxMessage, MaxOutputBytes: 4096, LogsPreviewBytes: 2048,
		MaxBlobSize: 1 << 20, DefaultRunTimeoutMS: 30000, MaxRunTimeoutMS: 600000, MaxInflight: 64}
	a.d.opts.Info.Limits = limits
	result := func(token string) InitializeResult {
		res, err := a.framedRaw().Call(t.Context(), MethodInitialize, map[string]any{"protocol_version": "1.0", "token": token})
		require.NoError(t, err)
		var ir InitializeResult
		require.NoError(t, json.Unmarshal(res, &ir))
		return ir
	}
	dashboard := result(tokenLimited)
	assert.Equal(t, []string{"ListSkills", "list_skills"}, dashboard.Methods)
	assert.Equal(t, limits, dashboard.Limits)

	agent := result(tokenAgent)
	for _, m := range []string{"run_code", "RunCode", "read_blob", "ReadBlob", "list_skills", "ListSkills"} {
		assert.Contains(t, agent.Methods, m)
	}
	assert.NotContains(t, agent.Methods, MethodInitialize)

	res, err := a.framedRaw().Call(t.Context(), MethodInitialize, map[string]any{"protocol_version": "1.0", "token": tokenLimited})
	require.NoError(t, err)
	var raw struct{ Limits map[string]int64 }
	require.NoError(t, json.Unmarshal(res, &raw))
	for _, k := range []string{"max_message_size", "max_output_bytes", "logs_preview_bytes", "max_blob_size",
		"default_run_timeout_ms", "max_run_timeout_ms", "max_inflight_requests"} {
		assert.Positive(t, raw.Limits[k], k)
	}
}

// A protocol_version a client got wrong is quoted whole up to 128 bytes
// and cut beyond, on a character boundary, with its length.
func TestInitializeVersionQuotedUpTo128(t *testing.T) {
	e := newEnv(t, "")
	details := func(version string) string {
		_, err := e.framedRaw().Call(t.Context(), MethodInitialize, map[string]string{"protocol_version": version})
		var te *transport.Error
		require.ErrorAs(t, err, &te)
		require.Equal(t, transport.StringInvalidParams, te.EffectiveCode())
		return te.Details
	}
	at := strings.Repeat("v", 128)
	assert.True(t, strings.HasSuffix(details(at), `got "`+at+`"`))
	assert.True(t, strings.HasSuffix(details(at+"w"), `got "`+at+`…[129 bytes]"`))
	cut := strings.Repeat("v", 127) + "é" + "w" // the character spans bytes 128 and 129
	assert.True(t, strings.HasSuffix(details(cut), `got "`+strings.Repeat("v", 127)+`…[130 bytes]"`), details(cut))
}
