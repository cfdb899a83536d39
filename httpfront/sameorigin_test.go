package httpfront

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/metrics"
)

// A same-origin request (Origin equal to the origin of the URL it was
// sent to: scheme, Host) reaches /rpc and /mcp without any allowed origin
// configured, over HTTP and HTTPS; a foreign origin, another scheme or
// port, and a rebound name on loopback are still refused.
func TestSameOriginAllowedByDefault(t *testing.T) {
	e := newEnv(t, "")
	front := New(e.d.Front(metrics.FrontHTTP), Options{MaxBodyBytes: testMaxMessage, MaxResponseBytes: testMaxMessage})
	front.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "mcp") }))
	for _, tls := range []bool{false, true} {
		srv := httptest.NewUnstartedServer(WithAccessLog(front, zerolog.Nop()))
		if tls {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		t.Cleanup(srv.Close)
		u, err := url.Parse(srv.URL)
		require.NoError(t, err)
		port := u.Port()
		other := "https"
		if tls {
			other = "http"
		}
		cases := []struct {
			name, host, origin string
			ok                 bool
		}{
			{"own origin", "", srv.URL, true},
			{"own origin, localhost", "localhost:" + port, u.Scheme + "://localhost:" + port, true},
			{"own origin, capitals", "", strings.ToUpper(srv.URL), true},
			{"own origin, default port", "localhost", u.Scheme + "://localhost", true},
			{"other scheme", "", other + "://" + u.Host, false},
			{"other port", "", u.Scheme + "://127.0.0.1:1", false},
			{"foreign origin", "", "https://evil.example", false},
			{"rebound name on loopback", "evil.example:" + port, u.Scheme + "://evil.example:" + port, false},
		}
		for _, tc := range cases {
			for _, path := range []string{"/rpc", "/mcp"} {
				req, err := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewBufferString(listCall))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Origin", tc.origin)
				if tc.host != "" {
					req.Host = tc.host
				}
				resp, err := srv.Client().Do(req)
				require.NoError(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := http.StatusForbidden
				if tc.ok {
					want = http.StatusOK
				}
				assert.Equal(t, want, resp.StatusCode, "tls=%v %s %s: %s", tls, tc.name, path, body)
			}
		}
	}
}
