package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSelfCheckComparesTheProbesOwner: the self-check fails when the file
// the probe wrote belongs to another host uid than the id map promises,
// even with every fact seen from the inside right. A template's sandbox
// keeps the map its user namespace was made with, so only the owner
// tells; a sandbox made from scratch under the moved map fails earlier,
// its directories being the old range's.
func TestSelfCheckComparesTheProbesOwner(t *testing.T) {
	r := ownRunner(t, nil)
	require.NoError(t, r.selfCheck())
	if r.ids.kind == idMapOwnID {
		return // the gateway's own uid: no range to move
	}
	saved := *r.ids
	t.Cleanup(func() { *r.ids = saved })
	r.ids.uid.start++
	r.ids.gid.start++
	err := r.selfCheck()
	require.Error(t, err)
	if r.templateOn {
		assert.Contains(t, err.Error(), "isolation self-check failed: the sandbox uid")
		assert.Contains(t, err.Error(), "is host uid")
	}
}
