package skills

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata/agent-skills is shaped like the public Agent Skills repositories:
// folders with scripts/, references and assets, one description over the
// spec's 1,024 characters, one front matter that strict YAML refuses (an
// unquoted colon), a template whose name differs from its folder, and keys
// the spec does not define. Every one of them loads; each departure is a
// warning naming its field.
func TestAgentSkillsLoadLeniently(t *testing.T) {
	r, _ := newRegistry(t, Options{Dir: "testdata/agent-skills"})
	rep := lastReport(t, r)
	require.Len(t, rep.Packages, 4)
	warnings := map[string][]string{
		"brand-kit":   {"SKILL.md:/argument-hint"},
		"colon-notes": {"SKILL.md:"},
		"long-brief":  {"SKILL.md:/description"},
		"template":    {"SKILL.md:/name"},
	}
	for rel, want := range warnings {
		p := reportFor(t, rep, rel)
		assert.Equal(t, StatusLoaded, p.Status, rel)
		assert.Empty(t, p.Violations, rel)
		assert.Equal(t, want, fields(p.Warnings), "%s: %v", rel, p.Warnings)
	}
	cat := r.Catalog()

	long, err := cat.Resolve("long-brief", "")
	require.NoError(t, err)
	assert.Greater(t, utf8.RuneCountInString(long.Manifest.Description), 1024, "served whole")
	assert.LessOrEqual(t, utf8.RuneCountInString(long.Summary()), 1024, "listings shorten it")
	assert.Contains(t, long.Summary(), "…")

	notes, err := cat.Resolve("colon-notes", "")
	require.NoError(t, err)
	assert.Equal(t, "Take meeting notes: decisions, owners and next steps, in that order.", notes.Manifest.Description,
		"recovered line by line from front matter that YAML refuses")

	tmpl, err := cat.Resolve("template-skill", "")
	require.NoError(t, err, "served under the front matter's name")
	assert.Equal(t, "template-skill", tmpl.Manifest.Name)

	brand, err := cat.Resolve("brand-kit", "2.1.0")
	require.NoError(t, err)
	assert.Equal(t, "[document]", brand.Front["argument-hint"], "unknown keys stay in the front matter")
	_, _, err = brand.ReadFile("assets/palette.json")
	assert.NoError(t, err)

	_, _, err = brand.ReadFile("scripts/palette.py")
	assert.NoError(t, err)
	assert.Equal(t, brand.Manifest.Description, brand.Summary(), "a short description is its own summary")
}
