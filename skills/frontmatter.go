package skills

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

const (
	maxAgentDescriptionLen = 1024
	maxCompatibilityLen    = 500
)

var (
	errFrontMatterUnclosed = errors.New("front matter opened with --- is never closed")
	utf8BOM                = []byte("\xef\xbb\xbf")
)

// splitFrontMatter separates a leading YAML front matter block from a
// Markdown document. The block opens with a first line "---" and closes
// with a line "---" or "..." (trailing spaces and CRLF line ends allowed, a
// UTF-8 BOM skipped). found is false when the document does not open a
// block; an opened block that never closes is an error.
func splitFrontMatter(doc []byte) (front, body []byte, found bool, err error) {
	doc = bytes.TrimPrefix(doc, utf8BOM)
	first, rest, ok := cutLine(doc)
	if !isFence(first, false) {
		return nil, doc, false, nil
	}
	if !ok {
		return nil, nil, true, errFrontMatterUnclosed
	}
	off := 0
	for len(rest[off:]) > 0 {
		line, _, more := cutLine(rest[off:])
		if isFence(line, true) {
			end := off + len(line)
			if more {
				end++
			}
			return rest[:off], rest[end:], true, nil
		}
		if !more {
			break
		}
		off += len(line) + 1
	}
	return nil, nil, true, errFrontMatterUnclosed
}

// cutLine returns the text before the first '\n' (with a trailing '\r'
// kept, isFence trims it) and whether a '\n' was found.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil, false
	}
	return b[:i], b[i+1:], true
}

func isFence(line []byte, closing bool) bool {
	t := string(bytes.TrimRight(line, " \t\r"))
	return t == "---" || closing && t == "..."
}

// parseFrontMatter splits doc and decodes its front matter as a YAML
// mapping made JSON-safe. Violations go to c (file SKILL.md).
func parseFrontMatter(c *collector, doc []byte) (map[string]any, string, bool) {
	const expected = "SKILL.md opening with a YAML front matter block between --- lines"
	front, body, found, err := splitFrontMatter(doc)
	switch {
	case err != nil:
		c.add("", expected, nil, "%v", err)
		return nil, "", false
	case !found:
		c.add("", expected, nil, "SKILL.md has no front matter")
		return nil, "", false
	}
	var raw any
	if err := yaml.Unmarshal(front, &raw); err != nil {
		c.add("", expected, nil, "front matter is not valid YAML: %v", err)
		return nil, "", false
	}
	if raw == nil {
		return map[string]any{}, string(body), true
	}
	m, ok := jsonSafe(raw).(map[string]any)
	if !ok {
		c.add("", "a YAML mapping", jsonSafe(raw), "front matter must be a mapping of keys to values")
		return nil, "", false
	}
	return m, string(body), true
}

// jsonSafe converts decoded YAML into values encoding/json accepts:
// mappings with non-string keys get their keys formatted, timestamps become
// RFC 3339 strings.
func jsonSafe(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonSafe(e)
		}
		return t
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = jsonSafe(e)
		}
		return out
	case []any:
		for i, e := range t {
			t[i] = jsonSafe(e)
		}
		return t
	case time.Time:
		return t.Format(time.RFC3339Nano)
	}
	return v
}

// packageFront is the front matter of a skill.toml package's SKILL.md.
type packageFront struct {
	title, shortDescription string
	tags                    []string
}

// checkPackageFront validates name and short_description (required
// strings) and tags (optional list of strings). Other keys are kept.
func checkPackageFront(c *collector, m map[string]any) packageFront {
	var pf packageFront
	if s, ok := requiredString(c, m, "", "name", "a display name for the skill"); ok {
		pf.title = strings.TrimSpace(s)
	}
	if s, ok := requiredString(c, m, "", "short_description", "a one-sentence summary"); ok {
		pf.shortDescription = strings.TrimSpace(s)
	}
	pf.tags = checkTags(c, m)
	return pf
}

func checkTags(c *collector, m map[string]any) []string {
	v, ok := m["tags"]
	if !ok || v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		c.add("/tags", "a list of strings", v, "wrong type")
		return nil
	}
	tags := make([]string, 0, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok || strings.TrimSpace(s) == "" {
			c.add(fmt.Sprintf("/tags/%d", i), "a non-empty string", e, "invalid tag")
			continue
		}
		tags = append(tags, s)
	}
	return tags
}

// agentFront is the front matter of an Agent Skills SKILL.md.
type agentFront struct {
	name, description string
	metadata          map[string]string
}

// checkAgentFront applies the Agent Skills rules (agentskills.io): name
// matching the folder, description, and the optional license,
// compatibility, metadata and allowed-tools. Other keys are kept.
func checkAgentFront(c *collector, m map[string]any, dirName string) agentFront {
	var af agentFront
	const nameExp = "1-64 lowercase letters, digits and single hyphens, equal to the folder name"
	if s, ok := requiredString(c, m, "", "name", nameExp); ok {
		if err := validateAgentSkillName(s); err != nil {
			c.add("/name", nameExp, s, "invalid name: %v", err)
		} else if s != dirName {
			c.add("/name", "the folder name "+dirName, s, "name must match the skill's folder name")
		} else {
			af.name = s
		}
	}
	const descExp = "a description of 1-1024 characters"
	if s, ok := requiredString(c, m, "", "description", descExp); ok {
		if len(s) > maxAgentDescriptionLen {
			c.add("/description", descExp, s, "description too long")
		} else {
			af.description = strings.Join(strings.Fields(s), " ")
		}
	}
	optionalString(c, m, "license", 0)
	optionalString(c, m, "compatibility", maxCompatibilityLen)
	optionalString(c, m, "allowed-tools", 0)
	af.metadata = checkMetadata(c, m)
	return af
}

func optionalString(c *collector, m map[string]any, key string, maxLen int) {
	v, ok := m[key]
	if !ok {
		return
	}
	s, isStr := v.(string)
	switch {
	case !isStr || s == "":
		c.add(pointer("", key), "a non-empty string", v, "wrong type")
	case maxLen > 0 && len(s) > maxLen:
		c.add(pointer("", key), fmt.Sprintf("at most %d characters", maxLen), s, "too long")
	}
}

func checkMetadata(c *collector, m map[string]any) map[string]string {
	v, ok := m["metadata"]
	if !ok || v == nil {
		return nil
	}
	tbl, ok := v.(map[string]any)
	if !ok {
		c.add("/metadata", "a mapping of strings to strings", v, "wrong type")
		return nil
	}
	out := make(map[string]string, len(tbl))
	for _, k := range slices.Sorted(maps.Keys(tbl)) {
		e := tbl[k]
		s, ok := e.(string)
		if !ok {
			c.add(pointer("/metadata", k), "a string (quote numbers: \"1.0\")", e, "metadata values must be strings")
			continue
		}
		out[k] = s
	}
	return out
}
