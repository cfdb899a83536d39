package deploy_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const troubleshootingPage = "../docs/troubleshooting.md"

// The Go standard library's packages whose errors a user meets at start-up
// (a port in use, a missing file, a certificate that does not load, a
// failed handshake): troubleshooting.md quotes them beside the gateway's.
var stdlibErrorDirs = []string{"crypto/tls", "crypto/x509", "syscall", "net", "os", "io/fs"}

// TestTroubleshootingQuotesExist: every message docs/troubleshooting.md
// quotes (a blockquote of one code span, or a code span that begins a
// table row) still occurs in the gateway's code or the standard library's,
// so the page cannot go on explaining an error that has been reworded.
// "…" marks the parts that vary; each piece between them must occur.
func TestTroubleshootingQuotesExist(t *testing.T) {
	quotes := troubleshootingQuotes(readFile(t, troubleshootingPage))
	require.GreaterOrEqual(t, len(quotes), 20, "the page quotes the errors it explains")
	corpus := goSources(t, "..")
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err)
	for _, dir := range stdlibErrorDirs {
		corpus += goSources(t, filepath.Join(strings.TrimSpace(string(goroot)), "src", dir))
	}
	for _, q := range quotes {
		for _, piece := range strings.Split(q, "…") {
			piece = strings.TrimSpace(piece)
			if len(piece) < 4 {
				continue // "=0", "in": too short to mean anything
			}
			assert.Contains(t, corpus, piece, "troubleshooting.md quotes %q, but no code says %q", q, piece)
		}
	}
}

// TestTroubleshootingQuoteCheckCatchesRewording runs the check's parts on
// a quote no code has, so that the test above cannot pass by finding
// nothing.
func TestTroubleshootingQuoteCheckCatchesRewording(t *testing.T) {
	page := "> `the gateway is made of cheese`\n\n| `also cheese: …` | x |\n|---|---|\n\n> `ok` and more text\n"
	assert.Equal(t, []string{"the gateway is made of cheese", "also cheese: …"}, troubleshootingQuotes(page))
	assert.NotContains(t, goSources(t, ".."), "the gateway is made of cheese")
}

var (
	quoteLine = regexp.MustCompile("^> `([^`]+)`$")
	rowQuote  = regexp.MustCompile("^\\| `([^`]+)`")
)

// troubleshootingQuotes returns the messages a page quotes.
func troubleshootingQuotes(page string) []string {
	var out []string
	for _, line := range strings.Split(page, "\n") {
		if m := quoteLine.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		} else if m := rowQuote.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// goSources is the text of the Go files under root, tests left out (a test
// that quotes a message does not make the code say it).
func goSources(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b.Write(data)
		b.WriteByte('\n')
		return nil
	})
	require.NoError(t, err)
	return b.String()
}
