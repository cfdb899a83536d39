package httpfront

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// FuzzHTTPBody: any body gets a well-formed answer with an allowed status,
// never a panic or a 500.
func FuzzHTTPBody(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","method":"list_skills","id":1}`, `[]`, `[{"foo":1},{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","method":"read_blob","params":{"blob_id":"blob:00"},"id":null}`, `"`, `{"jsonrpc":"2.0","id":[]}`} {
		f.Add(s)
	}
	d := dispatch.New(dispatch.Options{Info: dispatch.Info{MaxMessageSize: testMaxMessage}, Logger: zerolog.Nop()})
	h := New(d.Front(metrics.FrontHTTP), Options{MaxBodyBytes: testMaxMessage, MaxResponseBytes: testMaxMessage})
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
