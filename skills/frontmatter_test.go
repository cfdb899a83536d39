package skills

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitFrontMatter(t *testing.T) {
	tests := []struct {
		name, doc, front, body string
		found, err             bool
	}{
		{"plain", "---\na: 1\n---\n# Title\n", "a: 1\n", "# Title\n", true, false},
		{"crlf", "---\r\na: 1\r\n---\r\nbody", "a: 1\r\n", "body", true, false},
		{"bom", "\xef\xbb\xbf---\na: 1\n---\nbody", "a: 1\n", "body", true, false},
		{"dots close", "---\na: 1\n...\nbody", "a: 1\n", "body", true, false},
		{"fence spaces", "---  \na: 1\n---\t\nbody", "a: 1\n", "body", true, false},
		{"empty front", "---\n---\nbody", "", "body", true, false},
		{"closed at eof", "---\na: 1\n---", "a: 1\n", "", true, false},
		{"no front matter", "# Title\n---\n", "", "# Title\n---\n", false, false},
		{"leading blank line", "\n---\na: 1\n---\n", "", "\n---\na: 1\n---\n", false, false},
		{"unclosed", "---\na: 1\nbody\n", "", "", true, true},
		{"only fence", "---", "", "", true, true},
		{"fence with text is not a fence", "---\na: 1\n--- x\nbody", "", "", true, true},
		{"hr in body", "---\na: 1\n---\ntext\n---\nmore", "a: 1\n", "text\n---\nmore", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			front, body, found, err := splitFrontMatter([]byte(tc.doc))
			assert.Equal(t, tc.found, found)
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.front, string(front))
			assert.Equal(t, tc.body, string(body))
		})
	}
}

func TestParseFrontMatter(t *testing.T) {
	c := &collector{file: skillMDFile}
	m, body, ok := parseFrontMatter(c, []byte("---\nname: X\nwhen: 2024-01-02T03:04:05Z\nnested: {1: a, b: [x, {2: y}]}\n---\nbody"))
	require.True(t, ok, "%v", c.list)
	assert.Equal(t, "body", body)
	_, err := json.Marshal(m)
	require.NoError(t, err, "front matter is JSON-safe")
	assert.Equal(t, "2024-01-02T03:04:05Z", m["when"])
	assert.Equal(t, "a", m["nested"].(map[string]any)["1"])

	for _, doc := range []string{"no front", "---\n- a\n- b\n---\n", "---\na: [\n---\n", "---\nunclosed"} {
		c := &collector{file: skillMDFile}
		_, _, ok := parseFrontMatter(c, []byte(doc))
		assert.False(t, ok, doc)
		require.Len(t, c.list, 1, doc)
		assert.Equal(t, "SKILL.md", c.list[0].File)
	}
}

func TestPackageFront(t *testing.T) {
	c := &collector{file: skillMDFile}
	pf := checkPackageFront(c, map[string]any{"name": " Add ", "short_description": "Sums.", "tags": []any{"a", "b"}, "extra": 1})
	assert.Empty(t, c.list)
	assert.Equal(t, packageFront{title: "Add", shortDescription: "Sums.", tags: []string{"a", "b"}}, pf)

	c = &collector{file: skillMDFile}
	checkPackageFront(c, map[string]any{"name": 3, "tags": []any{"ok", 4, ""}})
	assert.Equal(t, []string{"SKILL.md:/name", "SKILL.md:/short_description", "SKILL.md:/tags/1", "SKILL.md:/tags/2"}, fields(c.list))

	c = &collector{file: skillMDFile}
	checkPackageFront(c, map[string]any{"name": "x", "short_description": "y", "tags": "a,b"})
	assert.Equal(t, []string{"SKILL.md:/tags"}, fields(c.list))
}

func TestAgentFront(t *testing.T) {
	c, w := &collector{file: skillMDFile}, &collector{file: skillMDFile}
	af := checkAgentFront(c, w, map[string]any{
		"name": "pdf-tips", "description": "Tips\n  for PDFs.", "license": "MIT",
		"metadata": map[string]any{"version": "1.2.0"}, "allowed-tools": "Read",
	}, "pdf-tips", "")
	assert.Empty(t, c.list)
	assert.Empty(t, w.list)
	assert.Equal(t, agentFront{name: "pdf-tips", description: "Tips for PDFs.", metadata: map[string]string{"version": "1.2.0"}}, af)

	// Departures from the spec are warnings naming the field; the skill
	// keeps the front matter's name and takes its description from the body.
	c, w = &collector{file: skillMDFile}, &collector{file: skillMDFile}
	af = checkAgentFront(c, w, map[string]any{
		"name": "pdf-tips", "license": 5, "compatibility": string(make([]byte, 501)),
		"metadata": map[string]any{"version": 1.0, "b": "ok", "a": []any{}}, "argument-hint": "x",
	}, "other", "# PDF tips\n\nFill  forms\nand merge.\n\nMore.")
	assert.Empty(t, c.list)
	assert.Equal(t, []string{"SKILL.md:/name", "SKILL.md:/description", "SKILL.md:/license", "SKILL.md:/compatibility",
		"SKILL.md:/metadata/a", "SKILL.md:/metadata/version", "SKILL.md:/argument-hint"}, fields(w.list))
	assert.Equal(t, "pdf-tips", af.name)
	assert.Equal(t, "Fill forms and merge.", af.description)

	// An invalid name falls back to a valid folder name; with neither the
	// skill has no usable name, the one violation.
	c, w = &collector{file: skillMDFile}, &collector{file: skillMDFile}
	af = checkAgentFront(c, w, map[string]any{"name": "Bad_Name", "description": "d", "metadata": "x"}, "bad-name", "")
	assert.Empty(t, c.list)
	assert.Equal(t, "bad-name", af.name)
	assert.Equal(t, []string{"SKILL.md:/name", "SKILL.md:/name", "SKILL.md:/metadata"}, fields(w.list))
	c, w = &collector{file: skillMDFile}, &collector{file: skillMDFile}
	checkAgentFront(c, w, map[string]any{"name": "Bad_Name", "description": "d"}, "Bad_Name", "")
	assert.Equal(t, []string{"SKILL.md:/name"}, fields(c.list))

	assert.Equal(t, "1.2.0-rc.1", agentSkillVersion(map[string]string{"version": "1.2.0-rc.1"}))
	assert.Equal(t, "0.0.0", agentSkillVersion(map[string]string{"version": "v1"}))
	assert.Equal(t, "0.0.0", agentSkillVersion(nil))
}

func TestClipText(t *testing.T) {
	assert.Equal(t, "abc", clipText("abc", 3))
	assert.Equal(t, "ab…", clipText("abcd", 3))
	long := strings.Repeat("word ", 300)
	got := clipText(long, 1024)
	assert.LessOrEqual(t, utf8.RuneCountInString(got), 1024)
	assert.True(t, strings.HasSuffix(got, "word…"), "cut at a word boundary: %q", got[len(got)-20:])
	assert.Equal(t, "ééé…", clipText(strings.Repeat("é", 2000), 4))
}

func TestLooseFrontMatter(t *testing.T) {
	m := looseFrontMatter([]byte("name: pdf\ndescription: Use it: for PDFs\n  and forms.\nlicense: 'MIT'\nx y: z\nblock: |\n"))
	assert.Equal(t, map[string]any{"name": "pdf", "description": "Use it: for PDFs and forms.", "license": "MIT", "block": ""}, m)
}

func FuzzSplitFrontMatter(f *testing.F) {
	for _, s := range []string{"---\na: 1\n---\nbody", "---\r\n...\r\n", "\xef\xbb\xbf---\n", "x", "---\n---", "---\n-- \n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		front, body, found, err := splitFrontMatter(doc)
		if err != nil || !found {
			return
		}
		if len(front)+len(body) > len(doc) {
			t.Fatalf("parts longer than the document")
		}
		c := &collector{file: skillMDFile}
		if m, _, ok := parseFrontMatter(c, doc); ok {
			if _, err := json.Marshal(m); err != nil {
				t.Fatalf("front matter not JSON-safe: %v", err)
			}
			checkPackageFront(c, m)
			checkAgentFront(c, c, m, "x", "")
			parseAgentFrontMatter(c, doc)
		}
	})
}

// FuzzAgentFrontMatter: any SKILL.md loads as an Agent Skill without a
// panic, with front matter that encodes as JSON, and a name only when it
// is a valid Agent Skills name.
func FuzzAgentFrontMatter(f *testing.F) {
	for _, s := range []string{"---\nname: pdf\ndescription: Use it: for PDFs\n---\nbody", "no front matter\n\nFirst paragraph.",
		"---\nname: [\n---\n", "---\n- a\n---\n", "---\nname: x\n", "---\ndescription: |\n  long\n  text\n---\n# H\n\npara"} {
		f.Add([]byte(s), "pdf-tools")
	}
	f.Fuzz(func(t *testing.T, doc []byte, dir string) {
		w := &collector{file: skillMDFile}
		m, body := parseAgentFrontMatter(w, doc)
		if _, err := json.Marshal(m); err != nil {
			t.Fatalf("front matter not JSON-safe: %v", err)
		}
		c := &collector{file: skillMDFile}
		af := checkAgentFront(c, w, m, dir, body)
		if (af.name == "") != (len(c.list) > 0) {
			t.Fatalf("name %q with violations %v", af.name, c.list)
		}
		if af.name != "" && validateAgentSkillName(af.name) != nil {
			t.Fatalf("served under an invalid name %q", af.name)
		}
		if utf8.RuneCountInString(firstParagraph(body)) > maxAgentDescriptionLen+1 {
			t.Fatalf("a derived description over the bound")
		}
	})
}
