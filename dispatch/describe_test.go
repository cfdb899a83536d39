package dispatch

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Research item 6: each detail level carries its own fields and none of
// the next level's. Every answer is decoded into a fresh map, so that a
// key of an earlier answer cannot hide a missing one.
func TestDescribeSkillDetailLevels(t *testing.T) {
	e := newEnv(t, examplesDir())
	for _, c := range e.fronts() {
		describe := func(detail string) map[string]any {
			params := `{"name":"acme.math.add"}`
			if detail != "" {
				params = `{"name":"acme.math.add","detail":"` + detail + `"}`
			}
			res, err := c.call("describe_skill", params)
			require.Nil(t, err, "%s: %v", detail, err)
			var got struct{ Skill map[string]any }
			require.NoError(t, json.Unmarshal(res, &got))
			return got.Skill
		}
		summaryKeys := []string{"namespace", "kind", "versions", "source"}
		fullKeys := []string{"skill_md", "files", "digest"}
		for _, detail := range []string{"manifest", "summary", "", "full"} {
			s := describe(detail)
			for _, k := range []string{"name", "version", "manifest"} {
				assert.Contains(t, s, k, "%s %q", c.name(), detail)
			}
			for _, k := range summaryKeys {
				if detail == "manifest" {
					assert.NotContains(t, s, k, "%s %q", c.name(), detail)
				} else {
					assert.Contains(t, s, k, "%s %q", c.name(), detail)
				}
			}
			for _, k := range fullKeys {
				if detail == "full" {
					assert.Contains(t, s, k, "%s %q", c.name(), detail)
				} else {
					assert.NotContains(t, s, k, "%s %q", c.name(), detail)
				}
			}
		}
	}
}
