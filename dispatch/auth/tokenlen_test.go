package auth

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tokens as long as the documented limit (4096 bytes), past the 128-byte
// stack buffer and mixed-case like generated ones are matched whole and
// exactly: the limit itself refuses one byte more even when its hash is
// on file, a change in the last byte or in case is a bad token.
func TestTokenLengthAndExactness(t *testing.T) {
	require.Equal(t, 4096, MaxTokenLen, "the documented limit")
	mixed, err := NewToken()
	require.NoError(t, err)
	for strings.ToLower(mixed) == mixed || strings.ToUpper(mixed) == mixed {
		mixed, err = NewToken()
		require.NoError(t, err)
	}
	atLimit := "sgt_" + strings.Repeat("a", 4092)
	overLimit := atLimit + "b"
	long := "sgt_" + strings.Repeat("L", 200) + "1"
	file := `version: 1
identities:
  - name: limits
    class: device
    tokens:
      - ` + HashToken(atLimit) + `
      - ` + HashToken(overLimit) + `
      - ` + HashToken(long) + `
      - ` + HashToken(mixed) + `
    methods: ["*"]
    namespaces: ["*"]
`
	s := loadStore(t, file, Options{Logger: testLogger(t)})
	for _, tok := range []string{atLimit, long, mixed} {
		id, err := s.AuthenticateToken(tok)
		if assert.NoError(t, err, "%.20s… (%d bytes)", tok, len(tok)) {
			assert.Equal(t, "limits", id.Name())
		}
	}
	for name, tok := range map[string]string{
		"one byte over the limit": overLimit,
		"last byte changed":       long[:len(long)-1] + "2",
		"last byte dropped":       long[:len(long)-1],
		"lower-cased":             strings.ToLower(mixed),
		"upper-cased":             strings.ToUpper(mixed),
	} {
		_, err := s.AuthenticateToken(tok)
		assert.ErrorIs(t, err, ErrBadCredentials, name)
		assert.Equal(t, ReasonInvalid, Reason(err), name)
	}
}
