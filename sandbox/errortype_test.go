package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A reported exception class name is kept when printable and at most 128
// bytes; anything else is "Exception".
func TestErrorTypeBounds(t *testing.T) {
	assert.Equal(t, "ValueError", errorType("ValueError"))
	assert.Equal(t, strings.Repeat("E", 128), errorType(strings.Repeat("E", 128)))
	assert.Equal(t, "Exception", errorType(strings.Repeat("E", 129)))
	assert.Equal(t, "Exception", errorType(""))
	assert.Equal(t, "Exception", errorType("Bad\nName"))
}
