package blob

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestObjectKeyOf512Bytes: a key of exactly 512 bytes is valid, one of
// 513 is not; a prefix is checked as a key once its trailing "/" is cut,
// and "" lists everything.
func TestObjectKeyOf512Bytes(t *testing.T) {
	key := "runs/" + strings.Repeat("k", 512-len("runs/"))
	assert.NoError(t, ValidateKey(key))
	assert.ErrorIs(t, ValidateKey(key+"k"), ErrInvalidKey)
	assert.ErrorIs(t, ValidateKey(""), ErrInvalidKey)

	assert.NoError(t, validatePrefix(""))
	assert.NoError(t, validatePrefix("runs/"))
	assert.NoError(t, validatePrefix(key+"/"))
	assert.ErrorIs(t, validatePrefix(key+"k/"), ErrInvalidKey)
	for _, bad := range []string{"/", "/runs", "runs//", ".runs/", "runs/.x"} {
		assert.ErrorIs(t, validatePrefix(bad), ErrInvalidKey, bad)
	}
}
