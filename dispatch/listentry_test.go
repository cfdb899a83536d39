package dispatch

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// list_skills entries carry description by default, as the Skills
// Protocol's example shows ({name, version, description}); detail
// "names" trims them to name and version, "summary" adds namespace and
// kind. Checked on the wire bytes, which are encoded by hand.
func TestListSkillsEntryShape(t *testing.T) {
	e := newEnv(t, examplesDir())
	for _, c := range e.fronts() {
		for detail, want := range map[string][]string{
			"":            {"name", "version", "description"},
			"description": {"name", "version", "description"},
			"names":       {"name", "version"},
			"summary":     {"name", "version", "description", "namespace", "kind"},
		} {
			params := `{"namespace":"acme","limit":1}`
			if detail != "" {
				params = `{"namespace":"acme","limit":1,"detail":"` + detail + `"}`
			}
			res, err := c.call("list_skills", params)
			require.Nil(t, err, "%s %s: %v", c.name(), detail, err)
			var page struct{ Skills []map[string]any }
			require.NoError(t, json.Unmarshal(res, &page))
			require.Len(t, page.Skills, 1)
			var keys []string
			for k := range page.Skills[0] {
				keys = append(keys, k)
			}
			assert.ElementsMatch(t, want, keys, "%s detail=%q", c.name(), detail)
			if detail != "names" {
				assert.NotEmpty(t, page.Skills[0]["description"], "%s detail=%q", c.name(), detail)
			}
		}
	}
}
