package skills

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The documented page sizes: 50 by default, at most 1000 whatever is
// asked, with more than 1000 names in the catalog so that the clamp shows.
func TestListDocumentedLimits(t *testing.T) {
	require.Equal(t, 50, DefaultListLimit)
	require.Equal(t, 1000, MaxListLimit)
	var skills []*Skill
	for i := range 1002 {
		skills = append(skills, fakeSkill(t, fmt.Sprintf("acme.s%04d", i), "1.0.0"))
	}
	c := newCatalog(skills)
	for _, tc := range []struct {
		limit, want int
		more        bool
	}{
		{0, 50, true}, {-1, 50, true}, {1, 1, true}, {999, 999, true}, {1000, 1000, true},
		{1001, 1000, true}, {1 << 30, 1000, true},
	} {
		page, err := c.List(ListQuery{Limit: tc.limit})
		require.NoError(t, err)
		assert.Len(t, page.Skills, tc.want, "limit %d", tc.limit)
		assert.Equal(t, tc.more, page.NextCursor != "", "limit %d", tc.limit)
	}
	page, err := c.List(ListQuery{Limit: 1002})
	require.NoError(t, err)
	last, err := c.List(ListQuery{Limit: 1002, Cursor: page.NextCursor})
	require.NoError(t, err)
	assert.Len(t, last.Skills, 2)
	assert.Empty(t, last.NextCursor, "the last page")
}

// A cursor is bound to the namespace it was made for even when its last
// name lies inside another query's namespace: one from the unfiltered
// list does not continue a filtered one, nor the other way round.
func TestListCursorBoundToNamespace(t *testing.T) {
	c := newCatalog([]*Skill{fakeSkill(t, "acme.a", "1.0.0"), fakeSkill(t, "acme.b", "1.0.0"), fakeSkill(t, "acme.c", "1.0.0")})
	all, err := c.List(ListQuery{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, all.NextCursor)
	_, err = c.List(ListQuery{Namespace: "acme", Cursor: all.NextCursor})
	assert.ErrorIs(t, err, ErrInvalidCursor)

	acme, err := c.List(ListQuery{Namespace: "acme", Limit: 1})
	require.NoError(t, err)
	_, err = c.List(ListQuery{Cursor: acme.NextCursor})
	assert.ErrorIs(t, err, ErrInvalidCursor)
	next, err := c.List(ListQuery{Namespace: "acme", Cursor: acme.NextCursor})
	require.NoError(t, err)
	require.NotEmpty(t, next.Skills)
	assert.Equal(t, "acme.b", next.Skills[0].Manifest.Name)
}
