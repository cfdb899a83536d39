package skills

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// An Agent Skills compatibility note may be exactly 500 characters long;
// one more is a warning.
func TestCompatibilityLengthBoundary(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []string
	}{{499, []string{}}, {500, []string{}}, {501, []string{"SKILL.md:/compatibility"}}} {
		c := &collector{file: skillMDFile}
		checkAgentFront(c, c, map[string]any{
			"name": "pdf-tips", "description": "d", "compatibility": strings.Repeat("x", tc.n),
		}, "pdf-tips", "")
		assert.Equal(t, tc.want, fields(c.list), "%d characters", tc.n)
	}
}
