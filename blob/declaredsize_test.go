package blob

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeclaredSizeAtTheLimit: a Put that declares exactly the limit is
// read and kept; one that declares a byte more is refused before its body
// is read (the reader is left whole), in both stores.
func TestDeclaredSizeAtTheLimit(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, 100, 0, func(t *testing.T, s Store, _ *fakeClock) {
		info, err := s.Put(ctx, s.NewID(), PutOptions{Kind: "text/plain", Size: 100}, bytes.NewReader(make([]byte, 100)))
		require.NoError(t, err)
		assert.EqualValues(t, 100, info.Size)

		body := strings.NewReader(strings.Repeat("x", 101))
		id := s.NewID()
		_, err = s.Put(ctx, id, PutOptions{Kind: "text/plain", Size: 101}, body)
		require.ErrorIs(t, err, ErrTooLarge)
		assert.EqualValues(t, 101, body.Len(), "refused before reading")
		_, err = s.Stat(ctx, id)
		assert.ErrorIs(t, err, ErrNotFound)
	})
}
