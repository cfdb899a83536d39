package dispatch

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// read_skill_file's max_bytes and offset are held exactly: a window of
// max_bytes from offset, truncated with the next offset while bytes
// remain, and the end of the file and one past it told apart.
func TestReadSkillFileWindow(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "acme.files.window", "1.0.0", map[string]string{"resources/abc.txt": "abcdefghij"})
	e := newEnv(t, dir)
	for _, c := range e.fronts() {
		read := func(params string) (SkillFile, bool) {
			res, err := c.call("read_skill_file", `{"name":"acme.files.window","path":"resources/abc.txt",`+params+`}`)
			if err != nil {
				assert.Contains(t, err.Details, `"offset" is past the end`, "%s: %v", params, err)
				return SkillFile{}, false
			}
			var f SkillFile
			require.NoError(t, json.Unmarshal(res, &f))
			return f, true
		}
		for _, tc := range []struct {
			params, content string
			next            int64 // 0: not truncated
		}{
			{`"max_bytes":3`, "abc", 3},
			{`"max_bytes":9`, "abcdefghi", 9},
			{`"max_bytes":10`, "abcdefghij", 0},
			{`"max_bytes":11`, "abcdefghij", 0},
			{`"offset":3,"max_bytes":4`, "defg", 7},
			{`"offset":7,"max_bytes":3`, "hij", 0},
			{`"offset":9`, "j", 0},
			{`"offset":10`, "", 0},
		} {
			f, ok := read(tc.params)
			require.True(t, ok, "%s %s", c.name(), tc.params)
			assert.Equal(t, tc.content, f.Content, "%s %s", c.name(), tc.params)
			assert.Equal(t, tc.next != 0, f.Truncated, "%s %s", c.name(), tc.params)
			if tc.next != 0 && assert.NotNil(t, f.NextOffset, "%s %s", c.name(), tc.params) {
				assert.Equal(t, tc.next, *f.NextOffset, "%s %s", c.name(), tc.params)
			}
			assert.Equal(t, int64(10), f.SizeBytes)
		}
		_, ok := read(`"offset":11`)
		assert.False(t, ok, "an offset past the end")
	}
}
