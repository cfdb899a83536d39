package runs

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The encoded size of a log text must equal what encoding/json writes for
// it, character class by character class: escaped two-byte characters,
// \uXXXX ones, plain ASCII and multi-byte UTF-8.
func TestJSONTextCostMatchesEncoding(t *testing.T) {
	for _, s := range []string{"", "a", "\n", "\r", "\t", `"`, `\`, "\x00", "\x1f", " ", "<", ">", "&",
		"\u2028", "\u2029", "é", "€", "𝄞", "\xff", "ab\ncd<é>\xfe"} {
		raw, err := json.Marshal(s)
		assert.NoError(t, err)
		assert.Equal(t, len(raw)-2, jsonTextCost([]byte(s)), "%q", s)
	}
}
