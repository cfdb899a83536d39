package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Tokens of the test files; their hashes go into the files.
const (
	tokPOS   = "sgt_pos-fleet-token"
	tokPOS2  = "sgt_pos-fleet-second-token"
	tokAgent = "sgt_agent-token"
	tokDash  = "sgt_dashboard-token"
)

// goodFile is a valid auth file; expand fills in the token hashes.
const goodFile = `# test auth file
version: 1
identities:
  - name: pos-fleet
    class: device
    tokens:
      - {{pos}}
      - {{pos2}}
    certificates:
      - common_name: device-42
      - dns_name: POS-7.Example.com.
      - uri: spiffe://example.com/pos
    methods: ["list_skills", "describe_skill", "execute_skill"]
    namespaces: ["acme", "skills"]
    limits:
      requests_per_second: 20
      burst: 40
      concurrent_runs: 2
      max_connections: 50
  - name: agent.main_1
    class: agent
    tokens: [{{agent}}]
    methods: ["*"]
    namespaces: ["*"]
    limits:
      requests_per_second: 2.5
  - name: dash
    class: dashboard
    tokens: [{{dash}}]
    certificates:
      - common_name: dashboard
    methods: [list_skills]
    namespaces: []
`

func expand(s string) string {
	return strings.NewReplacer(
		"{{pos}}", HashToken(tokPOS),
		"{{pos2}}", hashPrefix+strings.ToUpper(strings.TrimPrefix(HashToken(tokPOS2), hashPrefix)), // upper-case hex is accepted
		"{{agent}}", HashToken(tokAgent),
		"{{dash}}", HashToken(tokDash),
	).Replace(s)
}

// writeAtomic replaces path the way most editors and config tools do:
// write a temporary file, rename it over the old one.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

func tempFile(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func loadStore(t *testing.T, content string, opts Options) *Store {
	t.Helper()
	s, err := Load(tempFile(t, content), opts)
	require.NoError(t, err)
	return s
}

func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t))
}

// fakeClock is a manually advanced clock.
type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
