package skills

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A version of exactly 128 bytes parses; 129 bytes is refused, whatever
// the bytes are.
func TestVersionLengthBoundary(t *testing.T) {
	at := "1.0.0-" + strings.Repeat("a", 128-len("1.0.0-"))
	v, err := ParseVersion(at)
	if assert.NoError(t, err) {
		assert.Equal(t, at, v.String())
	}
	_, err = ParseVersion(at + "a")
	assert.ErrorIs(t, err, ErrInvalidVersion)
	assert.Contains(t, err.Error(), "longer than 128 bytes")
}

// Identifier characters are exactly [0-9A-Za-z-]: each edge of each range
// is accepted and the byte just outside it refused, in the pre-release and
// in the build metadata.
func TestVersionIdentifierAlphabetEdges(t *testing.T) {
	for _, c := range []string{"0", "9", "a", "z", "A", "Z", "-"} {
		for _, s := range []string{"1.0.0-x" + c, "1.0.0+x" + c} {
			_, err := ParseVersion(s)
			assert.NoError(t, err, s)
		}
	}
	for _, c := range []string{"/", ":", "`", "{", "@", "[", ","} {
		for _, s := range []string{"1.0.0-x" + c, "1.0.0+x" + c} {
			_, err := ParseVersion(s)
			assert.ErrorIs(t, err, ErrInvalidVersion, s)
		}
	}
	for _, s := range []string{"/.0.0", ":.0.0", "1./.0", "1.0.:"} {
		_, err := ParseVersion(s)
		assert.ErrorIs(t, err, ErrInvalidVersion, s)
	}
}

// A leading zero is refused in numeric pre-release identifiers and core
// numbers of two digits or more, allowed for "0" itself, in alphanumeric
// identifiers and in build metadata.
func TestVersionLeadingZeros(t *testing.T) {
	for _, s := range []string{"0.0.0-0", "1.0.0-0a", "1.0.0-0.0", "1.0.0+00", "1.0.0+0.01", "0.0.0-a.0"} {
		_, err := ParseVersion(s)
		assert.NoError(t, err, s)
	}
	for _, s := range []string{"00.0.0", "0.00.0", "0.0.00", "1.0.0-00", "1.0.0-a.01"} {
		_, err := ParseVersion(s)
		assert.ErrorIs(t, err, ErrInvalidVersion, s)
	}
}

// Precedence of pre-release identifiers: numeric below alphanumeric from
// either side, numeric by value at any length, a shorter list below a
// longer one with the same start, each core number deciding alone.
func TestVersionPrecedenceEdges(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.0.0-1", "1.0.0-a", -1},
		{"1.0.0-a", "1.0.0-1", 1},
		{"1.0.0-9", "1.0.0-10", -1},
		{"1.0.0-10", "1.0.0-9", 1},
		{"1.0.0-10", "1.0.0-10", 0},
		{"1.0.0-a.b", "1.0.0-a", 1},
		{"1.0.0-a", "1.0.0-a.b", -1},
		{"1.0.0-B", "1.0.0-a", -1},
		{"2.0.0", "1.9.9", 1},
		{"1.2.0", "1.1.9", 1},
		{"1.1.2", "1.1.1", 1},
		{"1.1.1", "1.1.2", -1},
		{"1.0.0-rc", "1.0.0", -1},
		{"1.0.0", "1.0.0-rc", 1},
	} {
		assert.Equal(t, tc.want, mustVersion(t, tc.a).Compare(mustVersion(t, tc.b)), "%s vs %s", tc.a, tc.b)
	}
	assert.False(t, mustVersion(t, "1.0.0+rc").IsPrerelease())
	assert.Equal(t, "0.0.0", Version{}.String())
}
