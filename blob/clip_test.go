package blob

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuotedValueClippedAt200Bytes: a value quoted in an error (here a bad
// blob id) is whole up to 200 bytes and cut to 200 plus "…" from 201,
// never inside a character; bytes that never start one are cut at 0.
func TestQuotedValueClippedAt200Bytes(t *testing.T) {
	quoted := func(id string) string {
		err := ValidateID(id)
		require.ErrorIs(t, err, ErrInvalidID)
		return err.Error()
	}
	x200 := strings.Repeat("x", 200)
	assert.Equal(t, strconv.Quote(x200)+": "+ErrInvalidID.Error(), quoted(x200))
	assert.Equal(t, strconv.Quote(x200+"…")+": "+ErrInvalidID.Error(), quoted(x200+"y"))
	assert.Equal(t, strconv.Quote(x200+"…")+": "+ErrInvalidID.Error(), quoted(x200+"yz"))

	// "é" in bytes 199 and 200: the cut falls before it.
	x199 := strings.Repeat("x", 199)
	assert.Equal(t, strconv.Quote(x199+"…")+": "+ErrInvalidID.Error(), quoted(x199+"é"))
	// "é" in bytes 198 and 199: whole, and the cut at 200.
	x198 := strings.Repeat("x", 198)
	assert.Equal(t, strconv.Quote(x198+"é"+"…")+": "+ErrInvalidID.Error(), quoted(x198+"éyz"))

	assert.Equal(t, strconv.Quote("…")+": "+ErrInvalidID.Error(), quoted(strings.Repeat("\x80", 201)))
}
