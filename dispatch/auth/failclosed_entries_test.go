package auth

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A rejected file keeps an identity only through exactly one readable
// entry of its name: entries that are no mapping, have no name, a name
// that is no string, or the name key twice vouch for nobody, and an
// identity whose own entry has its name key twice is disabled.
func TestRejectedReloadReadsOnlyWholeEntries(t *testing.T) {
	junk := "  - just-a-string\n" +
		"  - [name, pos-fleet]\n" + // a list read as key/value pairs would name pos-fleet a second time
		"  - class: agent\n" +
		"  - name: [dash]\n"
	tests := []struct {
		name     string
		edit     func(string) string
		kept     []string
		disabled []string
	}{
		{"junk entries", func(f string) string { return f + junk },
			[]string{tokAgent, tokDash, tokPOS}, nil},
		{"name key twice", func(f string) string {
			return strings.Replace(f, "  - name: dash\n", "  - name: dash\n    name: dash\n", 1)
		}, []string{tokAgent, tokPOS}, []string{tokDash}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempFile(t, expand(goodFile))
			s, err := Load(path, Options{Logger: testLogger(t)})
			require.NoError(t, err)
			writeAtomic(t, path, tt.edit(expand(goodFile)))
			require.ErrorIs(t, s.Reload(), ErrInvalidFile)
			for _, tok := range tt.kept {
				_, err := s.AuthenticateToken(tok)
				assert.NoError(t, err, tok)
			}
			for _, tok := range tt.disabled {
				_, err := s.AuthenticateToken(tok)
				assert.Equal(t, ReasonRevoked, Reason(err), tok)
			}
		})
	}
}
