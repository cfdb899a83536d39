package transport

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Unquote decodes a string token exactly as encoding/json does, escapes
// and UTF-16 surrogate pairs included: a lone or mismatched surrogate
// becomes U+FFFD and the character after it is kept.
func TestUnquoteAgreesWithEncodingJSON(t *testing.T) {
	for _, tok := range []string{
		`""`, `"plain"`, `"a\"b\\c\/d"`, `"\b\f\n\r\t"`, `"\u00e9\u0041"`,
		`"\ud83d\ude00"`,       // a pair: one character
		`"x\ud83d\ude00y"`,     // a pair between others
		`"\ud83d"`,             // a high surrogate at the end
		`"\ud83dx"`,            // a high surrogate before a plain byte
		`"\ud83d\u0041"`,       // a high surrogate before an escape that is no low one
		`"\ude00"`,             // a low surrogate alone
		`"\ud83d\ud83d\ude00"`, // a lone high one, then a pair
		`"\ud83d\n"`,           // a high surrogate before another escape
		`"\ud83d\ude0"`,        // a pair cut one digit short: not a token
		`"é\u00e9"`,
	} {
		var want string
		wantOK := json.Unmarshal([]byte(tok), &want) == nil
		got, ok := Unquote([]byte(tok))
		assert.Equal(t, wantOK, ok, tok)
		if wantOK {
			assert.Equal(t, want, got, tok)
		}
	}
}

func TestUnquoteRefusesWhatIsNotOneString(t *testing.T) {
	for _, tok := range []string{``, `x`, `"`, `"open`, `"a"b`, `"a" `, `1`, `"\x"`, "\"\x01\""} {
		got, ok := Unquote([]byte(tok))
		assert.False(t, ok, "%q", tok)
		assert.Empty(t, got, "%q", tok)
	}
}

// EachMember visits an object's members in order with their keys decoded,
// refuses anything that is not exactly one object, and stops at the first
// error its callback returns.
func TestEachMember(t *testing.T) {
	type member struct{ key, val string }
	var got []member
	err := EachMember([]byte(` {"a":1, "\u0062":"x", "c":{"d":[1]}} `), func(key, val []byte) error {
		got = append(got, member{string(key), string(val)})
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []member{{"a", "1"}, {"b", `"x"`}, {"c", `{"d":[1]}`}}, got)

	calls := 0
	stop := errors.New("stop")
	err = EachMember([]byte(`{"a":1,"b":2,"c":3}`), func(key, _ []byte) error {
		calls++
		if string(key) == "b" {
			return stop
		}
		return nil
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 2, calls, "no member after the error")

	require.NoError(t, EachMember([]byte(`{}`), func(_, _ []byte) error {
		t.Fatal("an empty object has no member")
		return nil
	}))
}

func TestEachMemberRefusesWhatIsNotOneObject(t *testing.T) {
	never := func(_, _ []byte) error { return nil }
	for _, in := range []string{``, `   `, `[1]`, `"a"`, `1`} {
		var ime *InvalidMessageError
		assert.ErrorAs(t, EachMember([]byte(in), never), &ime, "%q", in)
	}
	for _, in := range []string{`{"a":1} x`, `{"a":1}{}`, `{"a":}`, `{"a" 1}`, `{"a":1`, `{a:1}`} {
		var pe *ParseError
		assert.ErrorAs(t, EachMember([]byte(in), never), &pe, "%q", in)
	}
}

// An error's data.retry is read when it has the gateway's shape; any other
// shape, or a second retry member, stays among the extra members as sent.
func TestDecodeErrorRetry(t *testing.T) {
	e, err := DecodeError([]byte(`{"code":1,"message":"m","data":{"string_code":"OVERLOADED","retry":{"suggested_delay_ms":250,"max_attempts":3}}}`))
	require.NoError(t, err)
	require.NotNil(t, e.Retry)
	assert.Equal(t, Retry{SuggestedDelayMS: 250, MaxAttempts: 3}, *e.Retry)
	assert.Empty(t, e.Extra)

	for _, retry := range []string{`{"suggested_delay_ms":"soon"}`, `{"later":1}`, `[250]`, `250`} {
		e, err := DecodeError([]byte(`{"code":1,"message":"m","data":{"retry":` + retry + `}}`))
		require.NoError(t, err, retry)
		assert.Nil(t, e.Retry, retry)
		assert.Equal(t, map[string][]byte{"retry": []byte(retry)}, e.Extra, retry)
	}

	e, err = DecodeError([]byte(`{"code":1,"message":"m","data":{"retry":{"max_attempts":2},"retry":{"max_attempts":5}}}`))
	require.NoError(t, err)
	require.NotNil(t, e.Retry)
	assert.Equal(t, 2, e.Retry.MaxAttempts, "the first retry is the one read")
	assert.Equal(t, map[string][]byte{"retry": []byte(`{"max_attempts":5}`)}, e.Extra)
}
