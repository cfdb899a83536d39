package blob

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFSStoreRefusesBadHeaders: at open, a blob file whose header does
// not hold complete, valid metadata for its id is removed, and the log
// says why; a header that is whole is kept.
func TestFSStoreRefusesBadHeaders(t *testing.T) {
	const sum = "0000000000000000000000000000000000000000000000000000000000000000"
	good := map[string]any{"kind": "text/plain", "size": 3, "sha256": sum, "created": "2026-01-02T03:04:05Z"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range good {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		meta    map[string]any
		content string // the file's bytes after the header
		why     string // in the log's error; "" for a header that is kept
	}{
		{"whole", good, "abc", ""},
		{"empty content", with("size", 0), "", ""},
		{"bad kind", with("kind", "text"), "abc", "invalid blob kind"},
		{"negative size", with("size", -1), "", "incomplete metadata"},
		{"short digest", with("sha256", sum[1:]), "abc", "incomplete metadata"},
		{"long digest", with("sha256", sum+"0"), "abc", "incomplete metadata"},
		{"no creation time", with("created", nil), "abc", "incomplete metadata"},
		{"content cut", good, "ab", "blob file holds 2 bytes, header says 3"},
		{"content too long", good, "abcd", "blob file holds 4 bytes, header says 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openFS(t, dir, FSOptions{})
			id := s.NewID()
			require.NoError(t, s.Close())
			shard, file := s.path(id)
			require.NoError(t, os.MkdirAll(shard, 0o700))
			meta := with("id", id)
			for k, v := range tc.meta {
				meta[k] = v
			}
			if _, ok := tc.meta["created"]; !ok {
				delete(meta, "created")
			}
			js, err := json.Marshal(meta)
			require.NoError(t, err)
			hdr := append([]byte("SKILLGATE-BLOB 1\n"), js...)
			hdr = append(hdr, bytes.Repeat([]byte(" "), 511-len(hdr))...)
			hdr = append(hdr, '\n')
			require.Len(t, hdr, 512)
			require.NoError(t, os.WriteFile(file, append(hdr, tc.content...), 0o600))

			var logs bytes.Buffer
			s = openFS(t, dir, FSOptions{Logger: zerolog.New(&logs)})
			defer s.Close()
			count, _ := s.Usage()
			if tc.why == "" {
				assert.Equal(t, 1, count)
				assert.FileExists(t, file)
				assert.NotContains(t, logs.String(), "removing unreadable blob file")
				return
			}
			assert.Zero(t, count)
			assert.NoFileExists(t, file)
			var warned bool
			for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				var m struct{ Message, Error, Path string }
				require.NoError(t, json.Unmarshal([]byte(line), &m))
				if m.Message == "removing unreadable blob file" {
					warned = true
					assert.Contains(t, m.Error, tc.why)
					assert.Equal(t, filepath.Clean(file), m.Path)
				}
			}
			assert.True(t, warned, logs.String())
		})
	}
}
