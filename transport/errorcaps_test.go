package transport

import (
	"encoding/json"
	"errors"
	"io"
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

// MarshalObject passes objects through and refuses everything else.
func TestMarshalObject(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{nil, `{}`},
		{json.RawMessage(` {"a":1}`), ` {"a":1}`},
		{[]byte(`{"b":2}`), `{"b":2}`},
		{map[string]int{"c": 3}, `{"c":3}`},
	} {
		got, err := MarshalObject(tc.in)
		require.NoError(t, err, "%v", tc.in)
		assert.Equal(t, tc.want, string(got))
	}
	for _, in := range []any{json.RawMessage(``), json.RawMessage(`  `), []byte(`[1]`), 5, "s"} {
		_, err := MarshalObject(in)
		assert.Error(t, err, "%v", in)
	}
	_, err := MarshalObject(make(chan int))
	var ue *json.UnsupportedTypeError
	assert.ErrorAs(t, err, &ue)
}

// ScanEnvelope returns the members as sent and refuses invalid JSON,
// non-objects and duplicates, keeping the last copy of a duplicate.
func TestScanEnvelope(t *testing.T) {
	env, err := ScanEnvelope([]byte(`{"jsonrpc":"2.0","id":7,"method":"m","params":[1],"result":{},"error":{}}`))
	require.NoError(t, err)
	assert.Equal(t, Envelope{
		JSONRPC: []byte(`"2.0"`), ID: []byte(`7`), Method: []byte(`"m"`),
		Params: []byte(`[1]`), Result: []byte(`{}`), Error: []byte(`{}`),
	}, env)

	env, err = ScanEnvelope([]byte(`{"method":"a","method":"b"}`))
	var ie *InvalidMessageError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, `duplicate member "method"`, ie.Reason)
	assert.Equal(t, "method", env.Duplicate)
	assert.Equal(t, `"b"`, string(env.Method))

	_, err = ScanEnvelope([]byte(`{"method":`))
	var pe *ParseError
	assert.ErrorAs(t, err, &pe)
	_, err = ScanEnvelope([]byte(`[{}]`))
	assert.ErrorAs(t, err, &ie)
}

// A response must carry exactly one of result and error.
func TestDecodeResponseShapes(t *testing.T) {
	for body, reason := range map[string]string{
		`{"jsonrpc":"2.0","id":"1","result":{},"error":{"code":1,"message":"m"}}`: `response carries both "result" and "error"`,
		`{"jsonrpc":"2.0","id":"1"}`:             `response carries neither "result" nor "error"`,
		`{"jsonrpc":"2.0","id":"1","result":[]}`: `"result" must be an object`,
		`{"jsonrpc":"2.0","result":{}}`:          `message has neither "method" nor "id"`,
	} {
		var m Message
		err := Decode([]byte(body), &m)
		var ie *InvalidMessageError
		require.ErrorAs(t, err, &ie, body)
		assert.Equal(t, reason, ie.Reason, body)
	}
	var m Message
	require.NoError(t, Decode([]byte(`{"jsonrpc":"2.0","id":"1","result":{"a":1}}`), &m))
	assert.Equal(t, KindResult, m.Kind)
	assert.Equal(t, `{"a":1}`, string(m.Result))
	require.NoError(t, Decode([]byte(`{"jsonrpc":"2.0","id":"2","error":{"code":1,"message":"m"}}`), &m))
	assert.Equal(t, KindError, m.Kind)
	assert.Equal(t, "m", m.Error.Message)
}

// FrameBuffered looks at what is left after the frames already read, and
// a header declaring exactly the limit waits for its body.
func TestFrameBufferedAfterAFrame(t *testing.T) {
	for wire, want := range map[string]bool{
		"00000002:{}\n000":           false,
		"00000002:{}\n00000002:{":    false,
		"00000002:{}\n00000002:{}\n": true,
	} {
		fr := NewReader(strings.NewReader(wire), 1024)
		_ = fr.fill(len(wire) + 1)
		_, err := fr.ReadFrame()
		require.NoError(t, err)
		assert.Equal(t, want, fr.FrameBuffered(), "%q", wire)
		assert.Equal(t, len(wire)-12, fr.Buffered(), "%q", wire)
	}
	fr := NewReader(strings.NewReader("00000002:{"), 2)
	_ = fr.fill(11)
	assert.False(t, fr.FrameBuffered(), "a body of exactly the limit is not refused")
}

// zeroReader returns (0, nil) a given number of times, then its data.
type zeroReader struct {
	zeros int
	data  io.Reader
}

func (z *zeroReader) Read(p []byte) (int, error) {
	if z.zeros > 0 {
		z.zeros--
		return 0, nil
	}
	return z.data.Read(p)
}

// A source that returns nothing and no error is given 100 tries; the
// 101st fails with io.ErrNoProgress.
func TestReadFrameNoProgress(t *testing.T) {
	fr := NewReader(&zeroReader{zeros: 100, data: strings.NewReader("00000002:{}\n")}, 1024)
	body, err := fr.ReadFrame()
	require.NoError(t, err)
	assert.Equal(t, "{}", string(body))

	fr = NewReader(&zeroReader{zeros: 101, data: strings.NewReader("00000002:{}\n")}, 1024)
	_, err = fr.ReadFrame()
	assert.True(t, errors.Is(err, io.ErrNoProgress), "%v", err)
}

// A body that is not an object is told apart: invalid JSON is a parse
// error, a valid array a batch, any other valid value no object.
func TestDecodeNotAnObject(t *testing.T) {
	for _, body := range []string{`[1,`, `5 6`, `"x`} {
		var m Message
		var pe *ParseError
		assert.ErrorAs(t, Decode([]byte(body), &m), &pe, body)
	}
	for body, reason := range map[string]string{
		`[{}]`:  "batches are not supported",
		`5`:     "message is not a JSON object",
		`"str"`: "message is not a JSON object",
		// A literal that ends exactly where the body ends is whole.
		`true`:  "message is not a JSON object",
		`null`:  "message is not a JSON object",
		`false`: "message is not a JSON object",
	} {
		var m Message
		var ie *InvalidMessageError
		require.ErrorAs(t, Decode([]byte(body), &m), &ie, body)
		assert.Equal(t, reason, ie.Reason, body)
	}
}

// An error's string_code may have 64 characters (counted as characters,
// not bytes); 65 are refused.
func TestDecodeStringCodeLength(t *testing.T) {
	for _, n := range []int{63, 64, 65} {
		code := strings.Repeat("é", n)
		e, err := DecodeError([]byte(`{"code":1,"message":"m","data":{"string_code":"` + code + `"}}`))
		if n <= 64 {
			require.NoError(t, err, "%d characters", n)
			assert.Equal(t, code, e.StringCode)
			continue
		}
		var ie *InvalidMessageError
		require.ErrorAs(t, err, &ie, "%d characters", n)
		assert.Equal(t, "error data: string_code is longer than 64 characters", ie.Reason)
	}
}

// Leading zeros of a fraction do not count towards the 19-digit range:
// 0.000…01e20 is 1.
func TestParseIntegralLeadingFractionZeros(t *testing.T) {
	v, err := ParseIntegral([]byte("0.00000000000000000001e20"), 0, 10)
	require.NoError(t, err)
	assert.Equal(t, int64(1), v)
	v, err = ParseIntegral([]byte("-0.000000000000000000000000000005e30"), -10, 10)
	require.NoError(t, err)
	assert.Equal(t, int64(-5), v)
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

// AppendString passes ASCII from 0x20 and valid multi-byte characters
// through, and replaces a lone byte from 0x80 up with \ufffd: 0x7f is the
// last byte copied as is, 0x80 the first that is checked.
func TestAppendStringAtRuneSelf(t *testing.T) {
	assert.Equal(t, "\"\x7f\"", string(AppendString(nil, "\x7f")))
	assert.Equal(t, `"\ufffda"`, string(AppendString(nil, "\x80a")))
	assert.Equal(t, "\"\u0080\"", string(AppendString(nil, "\u0080")))
	assert.Equal(t, `" \u001f"`, string(AppendString(nil, " \x1f")))
}
