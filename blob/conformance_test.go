package blob_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/blob/blobtest"
)

func TestFSConformance(t *testing.T) {
	root := t.TempDir()
	blobtest.Run(t, func(t *testing.T, ns string, cfg blobtest.Config) blob.Store {
		s, err := blob.OpenFSStore(blob.FSOptions{Dir: filepath.Join(root, ns), MaxBlobSize: cfg.MaxSize, TTL: cfg.TTL,
			SweepInterval: 1 << 40, Now: cfg.Now})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, blobtest.Options{})
}

func TestMemConformance(t *testing.T) {
	var mu sync.Mutex
	stores := map[string]*blob.MemStore{}
	blobtest.Run(t, func(t *testing.T, ns string, cfg blobtest.Config) blob.Store {
		mu.Lock()
		defer mu.Unlock()
		if s := stores[ns]; s != nil {
			return s // a replica of a memory store is the store itself
		}
		s := blob.NewMemStore(blob.MemOptions{MaxBlobSize: cfg.MaxSize, TTL: cfg.TTL, Now: cfg.Now})
		stores[ns] = s
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, blobtest.Options{Replicas: true})
}
