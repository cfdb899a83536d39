package dispatch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParams: whatever the params, the accessors never panic, and an
// accepted integer is exactly what the JSON said.
func FuzzParams(f *testing.F) {
	for _, s := range []string{`{}`, `{"limit":2.00}`, `{"limit":1e400}`, `{"name":"x","limits":{"timeout_ms":5}}`,
		`{"input_blobs":["a",1]}`, `{"a":null}`, `[]`, `{"name":"\u00e4"}`, `{"cursor":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := newParams(raw)
		_ = p.String("name")
		_ = p.Enum("detail", "summary", "names", "summary")
		n := p.Int("limit", 50, 1, 1000)
		require.True(t, n >= 1 && n <= 1000)
		_ = p.Strings("input_blobs", 10)
		nested := p.Nested("limits")
		_ = nested.Int("timeout_ms", 0, 0, 1<<40)
		p.Adopt(nested)
		_ = p.Err()
	})
}
