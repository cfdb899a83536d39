package runs

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AllOwners lists every identity's runs, running and finished, each with
// its owner, in the same newest-first pages as one owner's; Owner finds
// whose a run is, and an unknown id is nobody's.
func TestListAllOwners(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	g := open(t, Config{Now: func() time.Time { return now }})
	owners := map[string]string{}
	for i, who := range []string{"alice", "bob", "alice", "carol"} {
		now = now.Add(time.Second)
		r := g.Start(NewID(), who, "run_code", "", nil)
		owners[r.ID()] = who
		if i%2 == 0 {
			r.Finish(StatusCompleted, json.RawMessage(`{}`))
		}
	}
	all, next, err := g.List(AllOwners, "", 10, "")
	require.NoError(t, err)
	assert.Empty(t, next)
	require.Len(t, all, 4)
	for _, s := range all {
		assert.Equal(t, owners[s.ID], s.Owner, s.ID)
		who, ok := g.Owner(s.ID)
		assert.True(t, ok)
		assert.Equal(t, owners[s.ID], who)
	}
	assert.Equal(t, "carol", all[0].Owner, "newest first")
	page, next, err := g.List(AllOwners, "finished", 1, "")
	require.NoError(t, err)
	require.Len(t, page, 1)
	rest, _, err := g.List(AllOwners, "finished", 10, next)
	require.NoError(t, err)
	assert.Len(t, rest, 1)
	running, _, err := g.List(AllOwners, StatusRunning, 10, "")
	require.NoError(t, err)
	assert.Len(t, running, 2)

	mine, _, err := g.List("alice", "", 10, "")
	require.NoError(t, err)
	require.Len(t, mine, 2)
	assert.Empty(t, mine[0].Owner, "one owner's list does not repeat the owner")
	_, ok := g.Owner("run_0123456789abcdef")
	assert.False(t, ok)
}
