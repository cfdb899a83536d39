package auth

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseProblems parses body (token placeholders expanded) and returns the
// problems as text; none for a valid file.
func parseProblems(t *testing.T, body string) []string {
	t.Helper()
	pol, err := Parse([]byte(expand(body)), ParseOptions{})
	if err == nil {
		require.NotNil(t, pol)
		return nil
	}
	var fe *FileError
	require.True(t, errors.As(err, &fe), "%v", err)
	out := make([]string, len(fe.Problems))
	for i, p := range fe.Problems {
		out[i] = p.String()
	}
	return out
}

// dnsName returns a syntactically valid DNS name of exactly n bytes.
func dnsName(n int) string {
	var labels []string
	for n > 0 {
		l := min(n, 63)
		if n-l == 1 { // a label of one byte more than the rest leaves room for the dot
			l--
		}
		labels = append(labels, strings.Repeat("a", l))
		n -= l + 1
	}
	return strings.Join(labels, ".")
}

// Every documented bound of the file's values, at the bound and one past
// it: names and namespaces of 64 bytes, common names of 64 printable
// characters, DNS names of 253 bytes, URIs of 2048 bytes.
func TestParseValueBounds(t *testing.T) {
	require.Len(t, dnsName(253), 253)
	require.Len(t, dnsName(254), 254)
	uri := func(n int) string {
		const base = "spiffe://example.com/"
		return base + strings.Repeat("p", n-len(base))
	}
	cert := func(key, value string) string {
		return identity + "    certificates:\n      - " + key + ": \"" + value + "\"\n"
	}
	tests := []struct {
		name, body string
		want       string // "" for valid
	}{
		{"name of 64", replaceLine(identity, 2, "  - name: "+strings.Repeat("n", 64)), ""},
		{"name of 65", replaceLine(identity, 2, "  - name: "+strings.Repeat("n", 65)), "identities[0].name: " + `"` + strings.Repeat("n", 64) + `..." is not a valid name`},
		{"namespace of 64", replaceLine(identity, 6, "    namespaces: ["+strings.Repeat("s", 64)+"]"), ""},
		{"namespace of 65", replaceLine(identity, 6, "    namespaces: ["+strings.Repeat("s", 65)+"]"), "identities[0].namespaces[0]: " + `"` + strings.Repeat("s", 64) + `..." is not a namespace`},
		{"common name of 1", cert("common_name", "c"), ""},
		{"common name of 64", cert("common_name", strings.Repeat("c", 64)), ""},
		{"common name of 65", cert("common_name", strings.Repeat("c", 65)), "common_name must be 1 to 64 printable characters"},
		{"common name starting with a control character", cert("common_name", `\x01device`), "common_name must be 1 to 64 printable characters"},
		{"common name ending with a control character", cert("common_name", `device\x7f`), "common_name must be 1 to 64 printable characters"},
		{"dns name of 253", cert("dns_name", dnsName(253)), ""},
		{"dns name of 254", cert("dns_name", dnsName(254)), "is not a DNS name"},
		{"dns name of one label", cert("dns_name", "localhost"), ""},
		{"dns name only a dot", cert("dns_name", "."), `"." is not a DNS name`},
		{"uri of 2048", cert("uri", uri(2048)), ""},
		{"uri of 2049", cert("uri", uri(2049)), "is not an absolute URI"},
		{"uri with a space", cert("uri", "spiffe://example.com/a b"), "is not an absolute URI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseProblems(t, tt.body)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "%q", got)
			assert.Contains(t, got[0], tt.want)
		})
	}
}

// Limits from 0 (unlimited) to 1000000, sizes to 2^50 bytes; one past is
// refused. Without limits an identity has none, and a rate without burst
// gets one second's worth, at least 1.
func TestParseLimitBounds(t *testing.T) {
	limits := func(body string) Limits {
		t.Helper()
		pol, err := Parse([]byte(expand(identity+body)), ParseOptions{})
		require.NoError(t, err)
		return pol.Identity("a").Limits()
	}
	assert.Equal(t, Limits{}, limits(""), "no limits key")
	assert.Equal(t, Limits{}, limits("    limits: {}\n"))
	assert.Equal(t, Limits{}, limits("    limits: {requests_per_second: 0, burst: 0, concurrent_runs: 0, max_connections: 0, blob_store_bytes: 0}\n"))
	assert.Equal(t, Limits{RequestsPerSecond: 1000000, Burst: 1000000, ConcurrentRuns: 1000000, MaxConnections: 1000000, BlobStoreBytes: 1 << 50},
		limits("    limits: {requests_per_second: 1000000, burst: 1000000, concurrent_runs: 1000000, max_connections: 1000000, blob_store_bytes: 1125899906842624}\n"))
	assert.Equal(t, Limits{RequestsPerSecond: 0.5, Burst: 1}, limits("    limits: {requests_per_second: 0.5}\n"))
	assert.Equal(t, Limits{RequestsPerSecond: 3, Burst: 3}, limits("    limits: {requests_per_second: 3}\n"))

	for key, bad := range map[string]string{
		"requests_per_second": "1000000.5",
		"burst":               "1000001",
		"concurrent_runs":     "1000001",
		"max_connections":     "1000001",
		"blob_store_bytes":    "1125899906842625",
	} {
		got := parseProblems(t, identity+"    limits: {"+key+": "+bad+"}\n")
		require.Len(t, got, 1, "%s: %q", key, got)
		assert.Contains(t, got[0], "identities[0].limits."+key+": must be a")
	}
	for _, bad := range []string{"-0.5", "-1"} {
		got := parseProblems(t, identity+"    limits: {concurrent_runs: "+bad+"}\n")
		assert.Len(t, got, 1, bad)
	}
}

// Values of the wrong shape inside lists are refused one by one, each with
// its own path, and nothing else is reported.
func TestParseItemShapes(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"token not a string", replaceLine(identity, 4, "    tokens: [[x]]"), []string{"4:14: identities[0].tokens[0]: must be a string, not a list"}},
		{"network item not a string", identity + "    network: [[x]]\n", []string{"7:15: identities[0].network[0]: must be a string, not a list"}},
		{"matcher not a mapping", identity + "    certificates: [device-42]\n", []string{"7:20: identities[0].certificates[0]: must be a mapping of keys to values, not a single value"}},
		{"matcher value not a string", identity + "    certificates:\n      - common_name: [x]\n", []string{"8:22: identities[0].certificates[0].common_name: must be a string, not a list"}},
		{"key that is no string", "identities: []\n? [a]\n: 1\n", []string{`2:3: unknown key ""; known keys: version, identities`}},
		{"identities empty", "identities:\nversion: 1\n", nil},
		{"version as text", "version: \"1\"\nidentities: []\n", []string{"1:10: version: must be 1, the only version of this format"}},
		{"version as list", "version: [1]\nidentities: []\n", []string{"1:10: version: must be 1, the only version of this format"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, parseProblems(t, tt.body))
		})
	}
}

// Messages quote what the file says up to 64 bytes and cut the rest.
func TestParseQuotesUpTo64Bytes(t *testing.T) {
	key64 := strings.Repeat("k", 64)
	got := parseProblems(t, "identities: []\n"+key64+": 1\n")
	require.Len(t, got, 1)
	assert.Contains(t, got[0], `unknown key "`+key64+`";`)
	got = parseProblems(t, "identities: []\n"+key64+"x: 1\n")
	require.Len(t, got, 1)
	assert.Contains(t, got[0], `unknown key "`+key64+`...";`)
}

// A problem without a position prints as its message alone, and a file
// error names the file (or "auth file") and puts the path only before
// problems that have a line.
func TestProblemAndFileErrorText(t *testing.T) {
	const empty = `the file is empty; to refuse every client write "identities: []"`
	_, err := Parse(nil, ParseOptions{})
	var fe *FileError
	require.True(t, errors.As(err, &fe))
	require.Len(t, fe.Problems, 1)
	assert.Equal(t, empty, fe.Problems[0].String())
	assert.Equal(t, "auth file: 1 problem(s):\n  "+empty, err.Error())

	path := tempFile(t, "")
	_, err = Load(path, Options{Logger: testLogger(t)})
	require.ErrorIs(t, err, ErrInvalidFile)
	assert.Equal(t, "load auth file: "+path+": 1 problem(s):\n  "+empty, err.Error())

	_, err = Parse([]byte("identities: []\nfoo: 1\n"), ParseOptions{})
	assert.Equal(t, "auth file: 1 problem(s):\n  2:1: unknown key \"foo\"; known keys: version, identities", err.Error())
	assert.Equal(t, "x", Problem{Message: "x"}.String())
	assert.Equal(t, "1:0: x", Problem{Line: 1, Message: "x"}.String())
}

// The file may be exactly 4 MiB; one byte more is refused before it is
// read as YAML. A second document that is no YAML is a syntax error.
func TestParseFileSizeAndDocuments(t *testing.T) {
	body := expand(identity)
	pad := 4<<20 - len(body) - 2
	pol, err := Parse([]byte(body+"#"+strings.Repeat("x", pad)+"\n"), ParseOptions{})
	require.NoError(t, err, "exactly 4 MiB")
	assert.Equal(t, []string{"a"}, pol.Names())

	got := parseProblems(t, body+"#"+strings.Repeat("x", pad+1)+"\n")
	assert.Equal(t, []string{"file is larger than 4194304 bytes"}, got)

	got = parseProblems(t, "identities: []\n---\nidentities: [\n")
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "YAML syntax: ")
	assert.NotContains(t, got[0], "more than one YAML document")
}
