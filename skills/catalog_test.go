package skills

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSkill builds a snapshot without files, for catalog tests.
func fakeSkill(t testing.TB, name, version string) *Skill {
	v, err := ParseVersion(version)
	require.NoError(t, err)
	return &Skill{Manifest: Manifest{Name: name, Version: version, Kind: KindInstruction}, Namespace: namespaceOf(name), version: v}
}

func listAll(t *testing.T, c *Catalog, ns string, limit int) []string {
	t.Helper()
	var names []string
	cursor := ""
	for range 10000 {
		page, err := c.List(ListQuery{Namespace: ns, Limit: limit, Cursor: cursor})
		require.NoError(t, err)
		if limit > 0 {
			assert.LessOrEqual(t, len(page.Skills), limit)
		}
		for _, s := range page.Skills {
			names = append(names, s.Manifest.Name)
		}
		if page.NextCursor == "" {
			return names
		}
		require.NotEmpty(t, page.Skills, "a page with a cursor is never empty")
		cursor = page.NextCursor
	}
	t.Fatal("pagination did not end")
	return nil
}

func TestResolveVersions(t *testing.T) {
	c := newCatalog([]*Skill{
		fakeSkill(t, "acme.x", "1.0.0"), fakeSkill(t, "acme.x", "1.10.0"), fakeSkill(t, "acme.x", "1.9.0"),
		fakeSkill(t, "acme.x", "2.0.0-rc.1"), fakeSkill(t, "acme.y", "0.1.0-alpha"), fakeSkill(t, "acme.y", "0.1.0-alpha.1"),
	})
	s, err := c.Resolve("acme.x", "")
	require.NoError(t, err)
	assert.Equal(t, "1.10.0", s.Manifest.Version, "the highest release, not the higher pre-release")
	s, _ = c.Resolve("acme.x", "latest")
	assert.Equal(t, "1.10.0", s.Manifest.Version)
	s, _ = c.Resolve("acme.x", "2.0.0-rc.1")
	assert.Equal(t, "2.0.0-rc.1", s.Manifest.Version, "a pinned pre-release")
	assert.Equal(t, []string{"2.0.0-rc.1", "1.10.0", "1.9.0", "1.0.0"}, c.Versions("acme.x"))
	s, _ = c.Resolve("acme.y", "")
	assert.Equal(t, "0.1.0-alpha.1", s.Manifest.Version, "only pre-releases: the highest of them")
	page, err := c.List(ListQuery{})
	require.NoError(t, err)
	assert.Equal(t, "1.10.0", page.Skills[0].Manifest.Version, "list_skills shows the version a call gets")
	s, err = c.Resolve("acme.x", "1.9.0")
	require.NoError(t, err)
	assert.Equal(t, "1.9.0", s.Manifest.Version)

	_, err = c.Resolve("acme.x", "3.0.0")
	require.ErrorIs(t, err, ErrSkillNotFound)
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, []string{"2.0.0-rc.1", "1.10.0", "1.9.0", "1.0.0"}, nf.Available)
	assert.Contains(t, err.Error(), "available: 2.0.0-rc.1")
	_, err = c.Resolve("acme.z", "")
	assert.ErrorIs(t, err, ErrSkillNotFound)
	assert.Nil(t, c.Versions("acme.z"))
	assert.Equal(t, 6, c.Len())
	assert.Equal(t, 2, c.Names())
	assert.Len(t, c.All(), 6)
}

func TestListPagination(t *testing.T) {
	var skills []*Skill
	for i := range 437 {
		ns := []string{"acme", "acmecorp", "beta", "acme-x"}[i%4]
		name := fmt.Sprintf("%s.d%03d.act", ns, i)
		if ns == "acme-x" {
			name = fmt.Sprintf("acme-x%03d", i) // Agent Skills style name
		}
		skills = append(skills, fakeSkill(t, name, "1.0.0"), fakeSkill(t, name, "1.1.0"))
	}
	skills = append(skills, fakeSkill(t, "acme", "1.0.0")) // a name equal to the namespace
	rand.Shuffle(len(skills), func(i, j int) { skills[i], skills[j] = skills[j], skills[i] })
	c := newCatalog(skills)

	all := listAll(t, c, "", 0)
	assert.Len(t, all, 438, "one entry per name")
	assert.IsIncreasing(t, all, "sorted by name without duplicates")
	for _, limit := range []int{1, 7, 50, 437, 438, 1000, 5000} {
		assert.Equal(t, all, listAll(t, c, "", limit), "limit %d", limit)
	}
	page, err := c.List(ListQuery{})
	require.NoError(t, err)
	assert.Len(t, page.Skills, DefaultListLimit)
	assert.Equal(t, "acme", page.Skills[0].Manifest.Name)
	assert.Equal(t, "1.1.0", page.Skills[1].Manifest.Version, "latest version listed")
	page, err = c.List(ListQuery{Limit: 1 << 30})
	require.NoError(t, err)
	assert.Len(t, page.Skills, 438, "limit clamped to MaxListLimit, all fit")
	assert.Empty(t, page.NextCursor)

	acme := listAll(t, c, "acme", 13)
	assert.Len(t, acme, 111, "whole dotted prefix: acme.* and acme itself, not acmecorp or acme-x")
	for _, n := range acme {
		assert.True(t, inNamespace(n, "acme"), n)
	}
	assert.Len(t, listAll(t, c, "acme.d000", 5), 1)
	assert.Empty(t, listAll(t, c, "nope", 5))
	assert.Empty(t, listAll(t, c, "acm", 5))
	assert.Len(t, listAll(t, c, "acme-x", 5), 0, "agent names are not namespaces of others")
}

func TestListInvalidCursors(t *testing.T) {
	c := newCatalog([]*Skill{fakeSkill(t, "acme.a", "1.0.0"), fakeSkill(t, "acme.b", "1.0.0"), fakeSkill(t, "beta.a", "1.0.0")})
	page, err := c.List(ListQuery{Namespace: "acme", Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, page.NextCursor)

	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	bad := []string{
		"!!!", "acme.a", enc("acme.a"), enc("c2\x00acme\x00acme.a"), enc(cursorMagic), enc(cursorMagic + "acme"),
		enc(cursorMagic + "acme\x00"), enc(cursorMagic + "acme\x00ACME.A"), enc(cursorMagic + "acme\x00beta.a"),
		page.NextCursor + "A", string(make([]byte, 2000)), base64.StdEncoding.EncodeToString([]byte(cursorMagic+"acme\x00acme.a")) + "=",
	}
	for _, cur := range bad {
		_, err := c.List(ListQuery{Namespace: "acme", Cursor: cur})
		assert.ErrorIs(t, err, ErrInvalidCursor, "%q", cur)
	}
	_, err = c.List(ListQuery{Namespace: "beta", Cursor: page.NextCursor})
	assert.ErrorIs(t, err, ErrInvalidCursor, "a cursor is tied to its namespace")
	page, err = c.List(ListQuery{Namespace: "acme", Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Len(t, page.Skills, 1)
	assert.Equal(t, "acme.b", page.Skills[0].Manifest.Name)
}

// A cursor from an older catalog continues by name in a newer one.
func TestListCursorAcrossCatalogs(t *testing.T) {
	old := newCatalog([]*Skill{fakeSkill(t, "a.a", "1.0.0"), fakeSkill(t, "a.c", "1.0.0"), fakeSkill(t, "a.e", "1.0.0")})
	page, err := old.List(ListQuery{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, "a.c", page.Skills[1].Manifest.Name)

	// a.c was removed, a.b and a.d added.
	cur := newCatalog([]*Skill{fakeSkill(t, "a.a", "1.0.0"), fakeSkill(t, "a.b", "1.0.0"), fakeSkill(t, "a.d", "1.0.0"), fakeSkill(t, "a.e", "1.0.0")})
	next, err := cur.List(ListQuery{Limit: 2, Cursor: page.NextCursor})
	require.NoError(t, err)
	var names []string
	for _, s := range next.Skills {
		names = append(names, s.Manifest.Name)
	}
	assert.Equal(t, []string{"a.d", "a.e"}, names)
	assert.Empty(t, next.NextCursor)
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor("", "acme.a"), "")
	f.Add(encodeCursor("acme", "acme.b"), "acme")
	f.Add("YzEAAGE", "")
	f.Add("", "x")
	c := newCatalog([]*Skill{fakeSkill(f, "acme.a", "1.0.0"), fakeSkill(f, "acme.b", "1.0.0")})
	f.Fuzz(func(t *testing.T, cur, ns string) {
		last, err := decodeCursor(cur, ns)
		if err == nil {
			if !plausibleName(last) || !inNamespace(last, ns) {
				t.Fatalf("decoded %q for namespace %q", last, ns)
			}
			if again, err := decodeCursor(encodeCursor(ns, last), ns); err != nil || again != last {
				t.Fatalf("round trip of %q failed", last)
			}
		}
		page, err := c.List(ListQuery{Namespace: ns, Cursor: cur, Limit: 1})
		if err == nil {
			for _, s := range page.Skills {
				if !inNamespace(s.Manifest.Name, ns) || (last != "" && s.Manifest.Name <= last) {
					t.Fatalf("page holds %q after %q in %q", s.Manifest.Name, last, ns)
				}
			}
		}
	})
}

func benchCatalog(b *testing.B) *Catalog {
	skills := make([]*Skill, 0, 10000)
	for i := range 5000 {
		name := fmt.Sprintf("ns%02d.domain%04d.action", i%50, i)
		skills = append(skills, fakeSkill(b, name, "1.0.0"), fakeSkill(b, name, "1.2.0"))
	}
	return newCatalog(skills)
}

func BenchmarkCatalogList(b *testing.B) {
	c := benchCatalog(b)
	first, err := c.List(ListQuery{Limit: 50})
	require.NoError(b, err)
	for _, q := range []ListQuery{
		{Limit: 50},
		{Limit: 50, Cursor: first.NextCursor},
		{Namespace: "ns07", Limit: 50},
		{Limit: 1000},
	} {
		b.Run(fmt.Sprintf("ns=%q/limit=%d/cursor=%v", q.Namespace, q.Limit, q.Cursor != ""), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.List(q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCatalogResolve(b *testing.B) {
	c := benchCatalog(b)
	names := make([]string, 5000)
	for i := range names {
		names[i] = fmt.Sprintf("ns%02d.domain%04d.action", i%50, i)
	}
	for _, v := range []string{"", "1.0.0"} {
		b.Run("version="+v, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := c.Resolve(names[i%len(names)], v); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func BenchmarkNewCatalog(b *testing.B) {
	skills := benchCatalog(b).All()
	b.ReportAllocs()
	for b.Loop() {
		newCatalog(skills)
	}
}
