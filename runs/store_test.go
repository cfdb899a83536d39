package runs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/runs/runstest"
)

func TestMemoryStoreConformance(t *testing.T) {
	runstest.Run(t, func(*testing.T) runs.Store { return runs.NewMemoryStore() })
}

func TestFileStoreConformance(t *testing.T) {
	runstest.Run(t, func(t *testing.T) runs.Store {
		s, err := runs.NewFileStore(t.TempDir())
		require.NoError(t, err)
		return s
	})
}
