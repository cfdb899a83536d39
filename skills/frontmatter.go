package skills

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

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

// parseAgentFrontMatter is parseFrontMatter for Agent Skills, which never
// refuses a document: a missing, unclosed or invalid block is a warning in
// w, and whatever can be recovered from it (see looseFrontMatter) is used.
func parseAgentFrontMatter(w *collector, doc []byte) (map[string]any, string) {
	front, body, found, err := splitFrontMatter(doc)
	switch {
	case err != nil:
		w.add("", "SKILL.md opening with a YAML front matter block between --- lines", nil, "%v; read as Markdown without front matter", err)
		return map[string]any{}, string(bytes.TrimPrefix(doc, utf8BOM))
	case !found:
		w.add("", "SKILL.md opening with a YAML front matter block between --- lines", nil, "SKILL.md has no front matter")
		return map[string]any{}, string(body)
	}
	var raw any
	if err := yaml.Unmarshal(front, &raw); err != nil {
		w.add("", "front matter that is valid YAML", nil, "front matter is not valid YAML (%v); read line by line", err)
		return looseFrontMatter(front), string(body)
	}
	m, ok := jsonSafe(raw).(map[string]any)
	if !ok {
		if raw != nil {
			w.add("", "a YAML mapping", jsonSafe(raw), "front matter is not a mapping of keys to values")
		}
		m = map[string]any{}
	}
	return m, string(body)
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

// agentFrontKeys are the front-matter keys of the Agent Skills spec; any
// other key is kept in Front and reported as a warning.
var agentFrontKeys = map[string]bool{
	"name": true, "description": true, "license": true,
	"compatibility": true, "metadata": true, "allowed-tools": true,
}

// checkAgentFront applies the Agent Skills rules (agentskills.io) the way
// clients of that format do: leniently. A skill that works elsewhere loads
// here, and every departure from the spec is a warning in w naming the
// field. Only the lack of a usable name is a violation in c: without one the
// skill cannot be addressed. A missing or invalid name falls back to the
// folder's; a missing description to the body's first paragraph.
func checkAgentFront(c, w *collector, m map[string]any, dirName, body string) agentFront {
	var af agentFront
	af.name = agentName(c, w, m, dirName)
	const descExp = "a description of 1-1024 characters"
	if s, ok := requiredString(w, m, "", "description", descExp); ok {
		af.description = strings.Join(strings.Fields(s), " ")
		if n := utf8.RuneCountInString(af.description); n > maxAgentDescriptionLen {
			w.add("/description", descExp, s, "description is %d characters; listings shorten it, describe_skill returns it whole", n)
		}
	} else {
		af.description = firstParagraph(body)
	}
	optionalString(w, m, "license", 0)
	optionalString(w, m, "compatibility", maxCompatibilityLen)
	optionalString(w, m, "allowed-tools", 0)
	af.metadata = checkMetadata(w, m)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !agentFrontKeys[k] {
			w.add(pointer("", k), "a key of the Agent Skills spec", m[k], "unknown front-matter key, kept in the front matter")
		}
	}
	return af
}

// agentName picks the name a skill is served under: the front matter's when
// it is a valid Agent Skills name, else the folder's (with a warning), else
// none (a violation).
func agentName(c, w *collector, m map[string]any, dirName string) string {
	const nameExp = "1-64 lowercase letters, digits and single hyphens, equal to the folder name"
	s, ok := requiredString(w, m, "", "name", nameExp)
	if ok {
		if err := validateAgentSkillName(s); err != nil {
			w.add("/name", nameExp, s, "invalid name: %v", err)
			ok = false
		}
	}
	dirValid := validateAgentSkillName(dirName) == nil
	switch {
	case ok && s != dirName:
		w.add("/name", "the folder name "+dirName, s, "name differs from the skill's folder name; served as %s", s)
		return s
	case ok:
		return s
	case dirValid:
		w.add("/name", nameExp, nil, "served under its folder name %s", dirName)
		return dirName
	}
	c.add("/name", nameExp, m["name"], "no usable name: neither the front matter's name nor the folder name %q is valid", dirName)
	return ""
}

// firstParagraph is the first paragraph of Markdown prose in body (headings,
// fences and blank lines skipped), whitespace collapsed, at most
// maxAgentDescriptionLen characters: the description of a skill whose front
// matter has none.
func firstParagraph(body string) string {
	var words []string
	inFence := false
	for line := range strings.Lines(body) {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			inFence = !inFence
			continue
		case inFence:
			continue
		case t == "" || strings.HasPrefix(t, "#"):
			if len(words) > 0 {
				return clipText(strings.Join(words, " "), maxAgentDescriptionLen)
			}
			continue
		}
		words = append(words, strings.Fields(t)...)
	}
	return clipText(strings.Join(words, " "), maxAgentDescriptionLen)
}

// clipText shortens s to at most n characters, at a word boundary where one
// is near, marking the cut with an ellipsis.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut, runes := 0, 0
	for i := range s {
		if runes == n-1 {
			cut = i
			break
		}
		runes++
	}
	if sp := strings.LastIndexByte(s[:cut], ' '); sp > cut*3/4 {
		cut = sp
	}
	return strings.TrimRight(s[:cut], " ") + "…"
}

// looseFrontMatter reads "key: value" lines of a front matter block that is
// not valid YAML (most often an unquoted colon inside a description), with
// indented lines continuing the previous value: enough to recover the name
// and description that other Agent Skills clients read from such files.
func looseFrontMatter(front []byte) map[string]any {
	m := map[string]any{}
	var key string
	for line := range strings.Lines(string(front)) {
		line = strings.TrimRight(line, "\r\n")
		if line != "" && (line[0] == ' ' || line[0] == '\t') {
			if s, ok := m[key].(string); ok && key != "" {
				m[key] = strings.TrimSpace(s + " " + strings.TrimSpace(line))
			}
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" || strings.ContainsAny(k, " \t\"'") {
			key = ""
			continue
		}
		key = k
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		if v == "|" || v == ">" || v == "|-" || v == ">-" {
			v = ""
		}
		m[k] = v
	}
	return m
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
