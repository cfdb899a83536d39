package dispatch

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/transport"
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

// FuzzHTTPBody: any body gets a well-formed answer with an allowed status,
// never a panic or a 500.
func FuzzHTTPBody(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","method":"list_skills","id":1}`, `[]`, `[{"foo":1},{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","method":"read_blob","params":{"blob_id":"blob:00"},"id":null}`, `"`, `{"jsonrpc":"2.0","id":[]}`} {
		f.Add(s)
	}
	d := New(Options{Info: Info{MaxMessageSize: testMaxMessage}, Logger: zerolog.Nop()})
	h := d.HTTPHandler(HTTPOptions{MaxBodyBytes: testMaxMessage, MaxResponseBytes: testMaxMessage})
	f.Fuzz(func(t *testing.T, body string) {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/rpc", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK:
			require.True(t, transport.ValidJSON(w.Body.Bytes()), "%s", w.Body.Bytes())
		case http.StatusNoContent:
			require.Zero(t, w.Body.Len())
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q", w.Code, body)
		}
	})
}
