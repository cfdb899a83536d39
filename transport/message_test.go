package transport

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type want int

const (
	wantOK want = iota
	wantParse
	wantInvalid
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		body string
		want want
		kind Kind
	}{
		{"request", `{"jsonrpc":"2.0","method":"ExampleMethod","params":{"example_argument":123},"id":"pt-1"}`, wantOK, KindRequest},
		{"request empty params", `{"jsonrpc":"2.0","method":"ExampleMethod","params":{},"id":"pt-1"}`, wantOK, KindRequest},
		{"request inner whitespace", "{ \"id\" : \"x\" ,\t\"params\" : { } ,\r\n\"method\" : \"M\" , \"jsonrpc\" : \"2.0\" }", wantOK, KindRequest},
		{"keepalive", `{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"pt-1"}`, wantOK, KindRequest},
		{"notification", `{"jsonrpc":"2.0","method":"_Info","params":{"message":"hi"}}`, wantOK, KindNotification},
		{"notification any params", `{"jsonrpc":"2.0","method":"_Info","params":[1,2]}`, wantOK, KindNotification},
		{"notification no params", `{"jsonrpc":"2.0","method":"_Info"}`, wantOK, KindNotification},
		{"result", `{"jsonrpc":"2.0","result":{"example_result":321},"id":"pt-1"}`, wantOK, KindResult},
		{"result with response_to", `{"jsonrpc":"2.0","response_to":"_Keepalive","result":{},"id":"pt-1"}`, wantOK, KindResult},
		{"error full", `{"jsonrpc":"2.0","error":{"code":1,"message":"m","data":{"string_code":"AMOUNT_TOO_HIGH","details":"d","limit":1000}},"id":"pt-1"}`, wantOK, KindError},
		{"error minimal", `{"jsonrpc":"2.0","error":{"code":1,"message":""},"id":"pt-1"}`, wantOK, KindError},
		{"error code spelled as float", `{"jsonrpc":"2.0","error":{"code":-32.6e3,"message":""},"id":"pt-1"}`, wantOK, KindError},
		{"unicode id", `{"jsonrpc":"2.0","method":"M","params":{},"id":"ä-\u00e4"}`, wantOK, KindRequest},

		{"empty", ``, wantParse, 0},
		{"leading space", ` {"jsonrpc":"2.0","method":"M","params":{},"id":"1"}`, wantParse, 0},
		{"leading tab", "\t{\"jsonrpc\":\"2.0\",\"method\":\"M\",\"params\":{},\"id\":\"1\"}", wantParse, 0},
		{"trailing newline", "{\"jsonrpc\":\"2.0\",\"method\":\"M\",\"params\":{},\"id\":\"1\"}\n", wantParse, 0},
		{"trailing carriage return", "{\"jsonrpc\":\"2.0\",\"result\":{},\"id\":\"1\"}\r", wantParse, 0},
		{"both ends", " {\"jsonrpc\":\"2.0\",\"method\":\"_Info\"} ", wantParse, 0},
		{"leading whitespace before a batch", ` [{"jsonrpc":"2.0","method":"M","params":{},"id":"1"}]`, wantParse, 0},
		{"whitespace only", "  \n", wantParse, 0},
		{"unbalanced", `{"jsonrpc":"2.0"`, wantParse, 0},
		{"missing quote", `{"jsonrpc:"2.0"}`, wantParse, 0},
		{"trailing comma", `{"jsonrpc":"2.0",}`, wantParse, 0},
		{"trailing data", `{"jsonrpc":"2.0","method":"M","params":{},"id":"1"} x`, wantParse, 0},
		{"two objects", `{}{}`, wantParse, 0},
		{"invalid utf-8 in string", "{\"jsonrpc\":\"2.0\",\"method\":\"M\",\"params\":{\"a\":\"\xff\"},\"id\":\"1\"}", wantParse, 0},
		{"invalid utf-8 in key", "{\"\xc3\":1}", wantParse, 0},
		{"utf-8 surrogate", "{\"a\":\"\xed\xa0\x80\"}", wantParse, 0},
		{"control char", "{\"a\":\"\x01\"}", wantParse, 0},
		{"bad escape", `{"a":"\x"}`, wantParse, 0},
		{"leading zero", `{"a":01}`, wantParse, 0},
		{"bare dot", `{"a":1.}`, wantParse, 0},
		{"NaN", `{"a":NaN}`, wantParse, 0},
		{"error code fraction", `{"jsonrpc":"2.0","error":{"code":3.0001,"message":""},"id":"pt-1"}`, wantParse, 0},
		{"error code over int32", `{"jsonrpc":"2.0","error":{"code":2147483648,"message":""},"id":"pt-1"}`, wantParse, 0},

		{"batch", `[{"jsonrpc":"2.0","method":"M","params":{},"id":"1"}]`, wantInvalid, 0},
		{"string", `"hello"`, wantInvalid, 0},
		{"empty object", `{}`, wantInvalid, 0},
		{"no jsonrpc", `{"method":"M","params":{},"id":"1"}`, wantInvalid, 0},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","method":"M","params":{},"id":"1"}`, wantInvalid, 0},
		{"jsonrpc number", `{"jsonrpc":2.0,"method":"M","params":{},"id":"1"}`, wantInvalid, 0},
		{"numeric id", `{"jsonrpc":"2.0","method":"M","params":{},"id":1}`, wantInvalid, 0},
		{"null id", `{"jsonrpc":"2.0","method":"M","params":{},"id":null}`, wantInvalid, 0},
		{"array params", `{"jsonrpc":"2.0","method":"M","params":[1],"id":"1"}`, wantInvalid, 0},
		{"missing params", `{"jsonrpc":"2.0","method":"M","id":"1"}`, wantInvalid, 0},
		{"null params", `{"jsonrpc":"2.0","method":"M","params":null,"id":"1"}`, wantInvalid, 0},
		{"numeric method", `{"jsonrpc":"2.0","method":1,"params":{},"id":"1"}`, wantInvalid, 0},
		{"method and result", `{"jsonrpc":"2.0","method":"M","params":{},"result":{},"id":"1"}`, wantInvalid, 0},
		{"duplicate id", `{"jsonrpc":"2.0","method":"M","params":{},"id":"1","id":"2"}`, wantInvalid, 0},
		{"result not object", `{"jsonrpc":"2.0","result":5,"id":"1"}`, wantInvalid, 0},
		{"result null", `{"jsonrpc":"2.0","result":null,"id":"1"}`, wantInvalid, 0},
		{"result without id", `{"jsonrpc":"2.0","result":{}}`, wantInvalid, 0},
		{"result numeric id", `{"jsonrpc":"2.0","result":{},"id":7}`, wantInvalid, 0},
		{"result and error", `{"jsonrpc":"2.0","result":{},"error":{"code":1,"message":""},"id":"1"}`, wantInvalid, 0},
		{"error no code", `{"jsonrpc":"2.0","error":{"message":"m"},"id":"1"}`, wantInvalid, 0},
		{"error no message", `{"jsonrpc":"2.0","error":{"code":1},"id":"1"}`, wantInvalid, 0},
		{"error string code", `{"jsonrpc":"2.0","error":{"code":"1","message":"m"},"id":"1"}`, wantInvalid, 0},
		{"error message number", `{"jsonrpc":"2.0","error":{"code":1,"message":5},"id":"1"}`, wantInvalid, 0},
		{"error data string", `{"jsonrpc":"2.0","error":{"code":1,"message":"m","data":"x"},"id":"1"}`, wantInvalid, 0},
		{"error string_code too long", `{"jsonrpc":"2.0","error":{"code":1,"message":"m","data":{"string_code":"` + strings.Repeat("A", 65) + `"}},"id":"1"}`, wantInvalid, 0},
		{"error details number", `{"jsonrpc":"2.0","error":{"code":1,"message":"m","data":{"details":5}},"id":"1"}`, wantInvalid, 0},
		{"error without id", `{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}`, wantInvalid, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Message
			err := Decode([]byte(tt.body), &m)
			switch tt.want {
			case wantOK:
				require.NoError(t, err)
				assert.Equal(t, tt.kind, m.Kind)
			case wantParse:
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, int32(CodeParseError), AbortError(err).Code)
			case wantInvalid:
				var ie *InvalidMessageError
				require.ErrorAs(t, err, &ie)
				assert.Equal(t, int32(CodeInvalidRequest), AbortError(err).Code)
			}
		})
	}
}

func TestDecodeFields(t *testing.T) {
	var m Message
	require.NoError(t, Decode([]byte(`{"jsonrpc":"2.0","method":"Ex\u0061mple","params":{"a":[1,{"b":null}]},"id":"pt-\"1\""}`), &m))
	assert.Equal(t, "Example", string(m.Method))
	assert.True(t, m.IsMethod("Example"))
	assert.Equal(t, `pt-"1"`, string(m.ID))
	assert.Equal(t, `"pt-\"1\""`, string(m.RawID))
	assert.Equal(t, `{"a":[1,{"b":null}]}`, string(m.Params))

	require.NoError(t, Decode([]byte(`{"jsonrpc":"2.0","error":{"code":1,"message":"m\u00e4","data":{"string_code":"X","details":"d","limit":1000}},"id":"gw-1"}`), &m))
	assert.Equal(t, KindError, m.Kind)
	assert.Equal(t, &Error{Code: 1, Message: "mä", StringCode: "X", Details: "d", Extra: map[string][]byte{"limit": []byte("1000")}}, m.Error)
}

func TestDecodeDoesNotAllocate(t *testing.T) {
	bodies := []string{
		`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"pt-1"}`,
		`{"jsonrpc":"2.0","result":{},"id":"gw-17"}`,
		`{"jsonrpc":"2.0","method":"list_skills","params":{"limit":1,"detail":"summary"},"id":"c-99"}`,
	}
	for _, body := range bodies {
		b := []byte(body)
		var m Message
		allocs := testing.AllocsPerRun(100, func() {
			if err := Decode(b, &m); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs, body)
	}
}

func TestParseIntegral(t *testing.T) {
	ok := map[string]int64{
		"123": 123, "123.00": 123, "12300e-2": 123, "12300E-2": 123, "0.123e3": 123,
		"0.123E3": 123, "0.123e+3": 123, "0.123E+3": 123, "-0": 0, "0e99999999999": 0,
		"-2147483648": math.MinInt32, "2147483647": math.MaxInt32, "1e9": 1e9, "-0.0": 0,
	}
	for in, want := range ok {
		got, err := ParseIntegral([]byte(in), math.MinInt32, math.MaxInt32)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	bad := []string{"3.0001", "1e-1", "0.5", "2147483648", "-2147483649", "1e10", "1e99999999999",
		"99999999999999999999", "", "-", "1.", "abc", "12 "}
	for _, in := range bad {
		_, err := ParseIntegral([]byte(in), math.MinInt32, math.MaxInt32)
		var pe *ParseError
		assert.ErrorAs(t, err, &pe, in)
	}
	v, err := ParseIntegral([]byte("-9223372036854775808"), math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	assert.Equal(t, int64(math.MinInt64), v)
	_, err = ParseIntegral([]byte("9223372036854775808"), math.MinInt64, math.MaxInt64)
	assert.Error(t, err)
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\"back\\slash", "ctl\x00\x01\x1f\n\r\t", "ä€😀", "<>&", "bad\xffutf8\xc3", "\u2028"} {
		enc := AppendString(nil, s)
		require.True(t, ValidJSON(enc), "%q -> %s", s, enc)
		var back string
		require.NoError(t, json.Unmarshal(enc, &back))
		if utf8.ValidString(s) {
			assert.Equal(t, s, back)
		} else {
			assert.Equal(t, strings.ToValidUTF8(s, "\ufffd"), back)
		}
	}
}

func TestErrorEncoding(t *testing.T) {
	e := AppError("AMOUNT_TOO_HIGH", "Requested amount is too high.").WithDetails("file.c:123").WithRetry(500, 3)
	e.Extra = map[string][]byte{"limit": []byte("1000"), "string_code": []byte(`"SHADOW"`), "bad": []byte("{")}
	got := string(AppendErrorResponse(nil, []byte(`"pt-1"`), e))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"pt-1","error":{"code":1,"message":"Requested amount is too high.",
		"data":{"string_code":"AMOUNT_TOO_HIGH","details":"file.c:123","retry":{"suggested_delay_ms":500,"max_attempts":3},"limit":1000}}}`, got)

	huge := &Error{Code: -32603, Message: strings.Repeat("m", 1<<20), StringCode: strings.Repeat("S", 100), Details: strings.Repeat("ä", 1<<20)}
	enc := AppendCloseReason(nil, huge)
	assert.LessOrEqual(t, len(enc), MinMessageSize)
	require.True(t, ValidJSON(enc))
	var m Message
	require.NoError(t, Decode(enc, &m))
	assert.Equal(t, KindNotification, m.Kind)
}

func TestStringCodeMapping(t *testing.T) {
	assert.Equal(t, "JSONRPC_PARSE_ERROR", StringCodeFor(-32700))
	assert.Equal(t, "JSONRPC_INVALID_REQUEST", StringCodeFor(-32600))
	assert.Equal(t, "JSONRPC_METHOD_NOT_FOUND", StringCodeFor(-32601))
	assert.Equal(t, "JSONRPC_INVALID_PARAMS", StringCodeFor(-32602))
	assert.Equal(t, "INTERNAL_ERROR", StringCodeFor(-32603))
	assert.Equal(t, "KEEPALIVE", StringCodeFor(-32000))
	assert.Equal(t, "UNKNOWN", StringCodeFor(1))
	assert.Equal(t, "UNKNOWN", StringCodeFor(-32001))
	assert.ErrorIs(t, AppError("OVERLOADED", "a"), AppError("OVERLOADED", "b"))
	assert.NotErrorIs(t, AppError("OVERLOADED", "a"), NewError(CodeInternalError, "a"))
}

// FuzzValidJSON checks the scanner against encoding/json: the transport
// accepts exactly the JSON texts encoding/json accepts that are valid UTF-8.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2,{"b":null}]}`, `"\ud83d\ude00"`, `-0.1e+5`, `01`, `{"a":}`,
		"\"\xff\"", `[1,]`, `{"a" 1}`, ` true `, `nul`, `"\u00"`, `[[[[[[]]]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := json.Valid(b) && utf8.Valid(b)
		if got := ValidJSON(b); got != want {
			t.Fatalf("ValidJSON(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

// FuzzDecode checks that Decode never panics and that whatever it accepts
// is valid JSON whose envelope encoding/json reads the same way.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"M","params":{},"id":"pt-1"}`,
		`{"jsonrpc":"2.0","result":{},"id":"pt-1"}`,
		`{"jsonrpc":"2.0","error":{"code":1,"message":"m","data":{"string_code":"X"}},"id":"1"}`,
		`{"jsonrpc":"2.0","method":"_Info","params":"x"}`,
		`{"jsonrpc":"2.0","method":"M","params":{},"id":"\u0041"}`,
		`[{"jsonrpc":"2.0"}]`,
		` {"jsonrpc":"2.0","method":"M","params":{},"id":"pt-1"}`,
		"{\"jsonrpc\":\"2.0\",\"result\":{},\"id\":\"pt-1\"}\n",
		"\r\n{\"jsonrpc\":\"2.0\",\"method\":\"_Info\"}\t",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Message
		if err := Decode(b, &m); err != nil {
			return
		}
		require.True(t, json.Valid(b) && utf8.Valid(b))
		// The body is the message, edge to edge: the framing allows no
		// whitespace around it.
		require.Equal(t, byte('{'), b[0])
		require.Equal(t, byte('}'), b[len(b)-1])
		var env struct {
			ID     *string         `json:"id"`
			Method *string         `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		require.NoError(t, json.Unmarshal(b, &env))
		switch m.Kind {
		case KindRequest:
			require.NotNil(t, env.ID)
			require.Equal(t, *env.ID, string(m.ID))
			require.Equal(t, *env.Method, string(m.Method))
		case KindNotification:
			require.Nil(t, env.ID)
			require.Equal(t, *env.Method, string(m.Method))
		case KindResult, KindError:
			require.NotNil(t, env.ID)
			require.Equal(t, *env.ID, string(m.ID))
		}
	})
}

func FuzzParseIntegral(f *testing.F) {
	for _, s := range []string{"123", "123.00", "12300e-2", "3.0001", "-0", "1e400", "9223372036854775807"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseIntegral(b, math.MinInt64, math.MaxInt64)
		if err != nil {
			return
		}
		// An accepted number is an exact integer: encoding/json's float
		// reading must agree to within float precision.
		var f64 float64
		require.NoError(t, json.Unmarshal(b, &f64))
		require.InDelta(t, f64, float64(v), math.Abs(f64)*1e-15+1e-9)
	})
}

func BenchmarkDecodeKeepalive(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"pt-12345"}`)
	var m Message
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := Decode(body, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeStdlib(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"pt-12345"}`)
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      *string         `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := json.Unmarshal(body, &env); err != nil {
			b.Fatal(err)
		}
	}
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

// AppendString passes ASCII from 0x20 and valid multi-byte characters
// through, and replaces a lone byte from 0x80 up with \ufffd: 0x7f is the
// last byte copied as is, 0x80 the first that is checked.
func TestAppendStringAtRuneSelf(t *testing.T) {
	assert.Equal(t, "\"\x7f\"", string(AppendString(nil, "\x7f")))
	assert.Equal(t, `"\ufffda"`, string(AppendString(nil, "\x80a")))
	assert.Equal(t, "\"\u0080\"", string(AppendString(nil, "\u0080")))
	assert.Equal(t, `" \u001f"`, string(AppendString(nil, " \x1f")))
}
