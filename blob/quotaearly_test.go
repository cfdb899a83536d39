package blob

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuotaRefusedBeforeReading: a Put whose declared size does not fit
// the store's quota, or the owner's, is refused before a byte of its body
// is read; one that fits exactly is kept; once the store is exactly full,
// a Put of unknown size (at least 1 byte) is refused before reading too.
func TestQuotaRefusedBeforeReading(t *testing.T) {
	ctx := context.Background()
	stores := map[string]func(t *testing.T) Store{
		"mem": func(*testing.T) Store { return NewMemStore(MemOptions{MaxStoreBytes: 100}) },
		"fs":  func(t *testing.T) Store { return openFS(t, t.TempDir(), FSOptions{MaxStoreBytes: 100}) },
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			put := func(owner string, size, quota int64, n int) (*strings.Reader, error) {
				body := strings.NewReader(strings.Repeat("x", n))
				_, err := s.Put(ctx, s.NewID(), PutOptions{Kind: "text/plain", Owner: owner, Size: size, OwnerQuota: quota}, body)
				return body, err
			}
			_, err := put("a", 0, 0, 60)
			require.NoError(t, err)

			body, err := put("b", 21, 20, 21)
			require.ErrorIs(t, err, ErrStorageFull)
			assert.Contains(t, err.Error(), "this identity's blobs hold 0 of its 20 bytes; this blob needs 21 more")
			assert.Equal(t, 21, body.Len(), "refused before reading")

			body, err = put("b", 41, 0, 41)
			require.ErrorIs(t, err, ErrStorageFull)
			assert.Contains(t, err.Error(), "the gateway's blob store holds 60 of its 100 bytes; this blob needs 41 more")
			assert.Equal(t, 41, body.Len(), "refused before reading")

			_, err = put("b", 40, 40, 40)
			require.NoError(t, err, "exactly the room left, and exactly the owner's quota")

			body, err = put("c", 0, 0, 1)
			require.ErrorIs(t, err, ErrStorageFull)
			assert.Contains(t, err.Error(), "holds 100 of its 100 bytes; this blob needs 1 more")
			assert.Equal(t, 1, body.Len(), "refused before reading")
		})
	}
}
