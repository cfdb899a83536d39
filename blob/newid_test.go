package blob

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// NewIDs hands out valid, distinct ids of NewID's form.
func TestNewIDs(t *testing.T) {
	assert.Empty(t, NewIDs(0))
	ids := NewIDs(16)
	require.Len(t, ids, 16)
	seen := map[string]bool{}
	for _, id := range ids {
		require.NoError(t, ValidateID(id), id)
		assert.Len(t, id, len(NewID()))
		assert.False(t, seen[id], "distinct")
		seen[id] = true
	}
}
