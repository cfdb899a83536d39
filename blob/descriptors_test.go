package blob

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openDescriptors counts this process's open file descriptors.
func openDescriptors(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(fds)
}

// TestFSStoreKeepsNoDescriptors: Puts, reads, object writes and removes
// leave no file open behind them (a store runs for weeks: one descriptor
// a Put would exhaust the table).
func TestFSStoreKeepsNoDescriptors(t *testing.T) {
	ctx := context.Background()
	s := openFS(t, t.TempDir(), FSOptions{})
	defer s.Close()
	before := openDescriptors(t)
	for i := range 20 {
		id := s.NewID()
		_, err := s.Put(ctx, id, PutOptions{Kind: "text/plain"}, strings.NewReader(strings.Repeat("x", 100+i)))
		require.NoError(t, err)
		assert.Len(t, readAll(t, s, id), 100+i)
		require.NoError(t, s.Remove(ctx, id))
		require.NoError(t, s.Objects().PutObject(ctx, "runs/r/record", strings.NewReader("x")))
	}
	assert.Equal(t, before, openDescriptors(t), "descriptors open before and after 20 Puts")
}
