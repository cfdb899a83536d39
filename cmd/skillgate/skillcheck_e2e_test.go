package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// skill check prints one VALIDATION_ERROR line per package that is not
// plainly valid and exits 1 only when one would be skipped.
func TestSkillCheck(t *testing.T) {
	out, errOut, code := runCLI(t, "skill", "check", "../../examples/skills", "../../skills/testdata/agent-skills")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "agent-skills: 4 packages: 4 valid, 4 with warnings, 0 invalid")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	for _, l := range lines {
		var got struct {
			Warning struct {
				Code    string
				Details struct {
					Path       string
					Violations []struct{ Field, Expected, Message string }
				}
			}
		}
		require.NoError(t, json.Unmarshal([]byte(l), &got), l)
		assert.Equal(t, "VALIDATION_ERROR", got.Warning.Code)
		assert.NotEmpty(t, got.Warning.Details.Violations, l)
	}

	bad := t.TempDir()
	pkg := filepath.Join(bad, "broken")
	require.NoError(t, os.MkdirAll(pkg, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "skill.toml"), []byte("name = \"Bad Name\"\nversion = \"1\"\n"), 0o644))
	out, errOut, code = runCLI(t, "skill", "check", pkg)
	assert.Equal(t, 1, code, errOut)
	var got struct {
		Error struct {
			Code    string
			Details struct {
				Path       string
				Violations []struct{ File, Field string }
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Equal(t, "VALIDATION_ERROR", got.Error.Code)
	assert.Equal(t, pkg, got.Error.Details.Path)
	fields := []string{}
	for _, v := range got.Error.Details.Violations {
		fields = append(fields, v.File+":"+v.Field)
	}
	assert.Contains(t, fields, "skill.toml:/name")
	assert.Contains(t, fields, "skill.toml:/version")
	assert.Contains(t, fields, "SKILL.md:", "every violation, not only the first")

	_, errOut, code = runCLI(t, "skill", "check", t.TempDir())
	assert.Equal(t, 1, code, "a folder without packages: %s", errOut)
	_, errOut, code = runCLI(t, "skill", "check", filepath.Join(bad, "missing"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no such file or directory")
}
