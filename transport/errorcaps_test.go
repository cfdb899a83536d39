package transport

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errorData decodes the data member of an encoded error object.
func errorData(t *testing.T, e *Error) map[string]json.RawMessage {
	t.Helper()
	var obj struct {
		Message string                     `json:"message"`
		Data    map[string]json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(e.AppendJSON(nil), &obj))
	return obj.Data
}

// Extra data is kept while its members, each counted as name, value and
// four bytes of punctuation, fit in 4096 bytes: a member of exactly 4096
// is kept, one of 4097 dropped.
func TestErrorExtraBudgetBoundary(t *testing.T) {
	for _, tc := range []struct {
		size int
		kept bool
	}{{4095, true}, {4096, true}, {4097, false}} {
		value := `"` + strings.Repeat("x", tc.size-4-1-2) + `"`
		e := AppError("X", "m")
		e.Extra = map[string][]byte{"k": []byte(value)}
		data := errorData(t, e)
		if tc.kept {
			assert.Equal(t, value, string(data["k"]), "size %d", tc.size)
		} else {
			assert.NotContains(t, data, "k", "size %d", tc.size)
		}
	}
}

// Members are taken in name order until the budget runs out: the first
// that does not fit ends the list, even if a later, smaller one would fit.
func TestErrorExtraBudgetStopsAtFirstMiss(t *testing.T) {
	e := AppError("X", "m")
	e.Extra = map[string][]byte{
		"a": []byte(`"` + strings.Repeat("x", 2000) + `"`),
		"b": []byte(`"` + strings.Repeat("x", 2100) + `"`),
		"c": []byte(`1`),
	}
	data := errorData(t, e)
	assert.Contains(t, data, "a")
	assert.NotContains(t, data, "b")
	assert.NotContains(t, data, "c")
}

// Details are capped at 8192 bytes: exactly 8192 pass unchanged, 8193 are
// cut to at most 8192 with a mark, never inside a UTF-8 character.
func TestErrorDetailsCapBoundary(t *testing.T) {
	const mark = "…[truncated]"
	exact := strings.Repeat("d", 8192)
	assert.Equal(t, `"`+exact+`"`, string(errorData(t, AppError("X", "m").WithDetails(exact))["details"]))

	over := strings.Repeat("d", 8193)
	want := strings.Repeat("d", 8192-len(mark)) + mark
	assert.Equal(t, `"`+want+`"`, string(errorData(t, AppError("X", "m").WithDetails(over))["details"]))

	// A two-byte character straddles the cut: it goes whole.
	cut := 8192 - len(mark)
	straddle := strings.Repeat("d", cut-1) + "é" + strings.Repeat("d", 100)
	var got string
	require.NoError(t, json.Unmarshal(errorData(t, AppError("X", "m").WithDetails(straddle))["details"], &got))
	assert.Equal(t, strings.Repeat("d", cut-1)+mark, got)
	assert.True(t, utf8.ValidString(got))
}

// The message is capped at 1024 bytes: exactly 1024 pass unchanged.
func TestErrorMessageCapBoundary(t *testing.T) {
	for _, n := range []int{1023, 1024} {
		msg := strings.Repeat("m", n)
		var obj struct{ Message string }
		require.NoError(t, json.Unmarshal(AppError("X", msg).AppendJSON(nil), &obj))
		assert.Equal(t, msg, obj.Message)
	}
	var obj struct{ Message string }
	require.NoError(t, json.Unmarshal(AppError("X", strings.Repeat("m", 1025)).AppendJSON(nil), &obj))
	assert.Len(t, obj.Message, 1024)
	assert.True(t, strings.HasSuffix(obj.Message, "…[truncated]"))
}

// Error() names the string code, the numeric code, the message and, when
// present, the details.
func TestErrorString(t *testing.T) {
	assert.Equal(t, "X (1): m", AppError("X", "m").Error())
	assert.Equal(t, "X (1): m: d", AppError("X", "m").WithDetails("d").Error())
}

// An _Error notification names the message it concerns, or none.
func TestAppendErrorNotification(t *testing.T) {
	e := AppError("X", "m")
	var m Message
	require.NoError(t, Decode(AppendErrorNotification(nil, []byte(`"7"`), e), &m))
	assert.Equal(t, KindNotification, m.Kind)
	assert.Equal(t, `{"id":"7","error":{"code":1,"message":"m","data":{"string_code":"X"}}}`, string(m.Params))
	require.NoError(t, Decode(AppendErrorNotification(nil, nil, e), &m))
	assert.Equal(t, `{"error":{"code":1,"message":"m","data":{"string_code":"X"}}}`, string(m.Params))
}
