package mcpfront

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/dispatch"
	sgauth "github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/skills"
)

// An idle session is closed after HTTPOptions.SessionTimeout, exactly:
// a second short of it the session answers, at it the session is gone.
// Left 0, the timeout is DefaultSessionTimeout, 30 minutes. In virtual
// time (testing/synctest), with requests served in process.
func TestSessionTimeout(t *testing.T) {
	for _, tc := range []struct {
		set, want time.Duration
	}{
		{20 * time.Second, 20 * time.Second},
		{0, 30 * time.Minute},
	} {
		synctest.Test(t, func(t *testing.T) {
			reg, err := skills.NewRegistry(skills.Options{Logger: zerolog.Nop()})
			require.NoError(t, err)
			defer reg.Close()
			blobs := blob.NewMemStore(blob.MemOptions{})
			defer blobs.Close()
			d := dispatch.New(dispatch.Options{Logger: zerolog.Nop(), Skills: reg, Blobs: blobs, Runner: cannedRunner{},
				Info: dispatch.Info{MaxMessageSize: 1 << 20}})
			srv, err := New(Options{Front: d.Front(metrics.FrontMCP), Skills: reg, Logger: zerolog.Nop()})
			require.NoError(t, err)
			h := srv.HTTPHandler(HTTPOptions{MaxBodyBytes: 1 << 20, SessionTimeout: tc.set,
				Authenticate: func(*http.Request) (*sgauth.Identity, error) { return sgauth.Anonymous(sgauth.Limits{}), nil }})
			serve := func(session, body string) *httptest.ResponseRecorder {
				req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", "2025-06-18")
				if session != "" {
					req.Header.Set("Mcp-Session-Id", session)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec
			}
			rec := serve("", initializeBody)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			session := rec.Header().Get("Mcp-Session-Id")
			require.NotEmpty(t, session)
			require.Less(t, serve(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Code, 300)
			ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`

			time.Sleep(tc.want - time.Second)
			synctest.Wait()
			assert.Equal(t, http.StatusOK, serve(session, ping).Code, "idle a second short of %v: alive", tc.want)

			time.Sleep(tc.want)
			synctest.Wait()
			assert.Equal(t, http.StatusNotFound, serve(session, ping).Code, "idle %v: closed", tc.want)
		})
	}
}
