package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pages whose links must resolve: the front page and the manual.
const (
	frontPage = "../README.md"
	docsGlob  = "../docs/*.md"
)

// TestDocLinksResolve: every relative link of the front page and of docs/
// names a file that exists and, when it has a #fragment into a Markdown
// page, a heading of that page. Links out of the repository are not
// followed: the test must not need the network.
func TestDocLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(docsGlob)
	require.NoError(t, err)
	require.NotEmpty(t, pages, "no pages match %s", docsGlob)
	for _, page := range append([]string{frontPage}, pages...) {
		for _, err := range brokenLinks(page) {
			t.Error(err)
		}
	}
}

// TestLinkCheckerCatchesBrokenLinks runs the checker on pages broken on
// purpose, so that TestDocLinksResolve cannot pass by checking nothing.
func TestLinkCheckerCatchesBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		return path
	}
	write("docs/b.md", "# B page\n\n## The `run_code` method\n\n## Twice\n\n## Twice\n")
	page := write("a.md", strings.Join([]string{
		"# A",
		"[ok](docs/b.md) [ok](docs/b.md#the-run_code-method) [ok](docs/b.md#twice-1) [ok](#a)",
		"[ok](https://example.com/nowhere) [ok](mailto:x@example.com) ![ok](docs/b.md \"title\")",
		"`[in code](missing.md)`",
		"```",
		"[in a fence](missing.md)",
		"```",
		"[gone](missing.md) [no anchor](docs/b.md#nope) [no self anchor](#nope) <img src=\"nope.svg\">",
	}, "\n"))
	var got []string
	for _, err := range brokenLinks(page) {
		got = append(got, err.Error())
	}
	require.Len(t, got, 4, "%q", got)
	for i, want := range []string{"missing.md", "docs/b.md#nope", "#nope", "nope.svg"} {
		assert.Contains(t, got[i], want)
	}
}

var (
	mdLinkRE     = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	htmlLinkRE   = regexp.MustCompile(`(?:src|href)="([^"]+)"`)
	codeSpanRE   = regexp.MustCompile("`[^`]*`")
	headingRE    = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	htmlAnchorRE = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	schemeRE     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	slugDropRE   = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// brokenLinks lists the links of one Markdown page that do not resolve.
func brokenLinks(page string) []error {
	text, err := os.ReadFile(page)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, target := range pageLinks(string(text)) {
		if err := checkLink(page, target); err != nil {
			errs = append(errs, fmt.Errorf("%s: link %q: %w", page, target, err))
		}
	}
	return errs
}

// pageLinks returns the link targets of a page in order, leaving out
// fenced code blocks and code spans, where brackets are not links.
func pageLinks(text string) []string {
	var links []string
	for _, line := range proseLines(text) {
		line = codeSpanRE.ReplaceAllString(line, "")
		for _, re := range []*regexp.Regexp{mdLinkRE, htmlLinkRE} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				links = append(links, m[1])
			}
		}
	}
	return links
}

// proseLines drops fenced code blocks.
func proseLines(text string) []string {
	var lines []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, line)
		}
	}
	return lines
}

func checkLink(page, target string) error {
	if schemeRE.MatchString(target) || strings.HasPrefix(target, "//") {
		return nil
	}
	path, frag, _ := strings.Cut(target, "#")
	file := page
	if path != "" {
		file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
		if _, err := os.Stat(file); err != nil {
			return fmt.Errorf("no such file %s", file)
		}
	}
	if frag == "" || !strings.HasSuffix(file, ".md") {
		return nil
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if !anchors(string(text))[frag] {
		return fmt.Errorf("%s has no heading for #%s", file, frag)
	}
	return nil
}

// anchors returns the fragment ids a Markdown page offers, made from its
// headings the way GitHub makes them (lower case, punctuation dropped,
// spaces to hyphens, "-1", "-2" for repeats), plus explicit <a id>s.
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(text) {
		for _, m := range htmlAnchorRE.FindAllStringSubmatch(line, -1) {
			ids[m[1]] = true
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := strings.ReplaceAll(slugDropRE.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			ids[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			ids[slug] = true
		}
		seen[slug]++
	}
	return ids
}

// operationsPage documents the alerts for the people they page.
const operationsPage = "../docs/operations.md"

// alertRowRE matches a row of the alert table: "| `SkillgateX` | severity |".
var alertRowRE = regexp.MustCompile("(?m)^\\| `(Skillgate[A-Za-z]+)` \\| ([a-z]+) \\|")

// TestOperationsListsEveryAlert: the alert table of docs/operations.md has
// one row per alert of prometheus/alerts.yml, with its severity, and no row
// for an alert that is gone.
func TestOperationsListsEveryAlert(t *testing.T) {
	doc, err := os.ReadFile(operationsPage)
	require.NoError(t, err)
	documented := map[string]string{}
	for _, m := range alertRowRE.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = m[2]
	}
	rules := map[string]string{}
	for _, r := range alertRules(t) {
		rules[r.Alert] = r.Labels["severity"]
	}
	assert.Equal(t, rules, documented, "the alert table of %s and %s differ", operationsPage, alertsPath)
}
