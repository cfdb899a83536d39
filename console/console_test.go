package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func get(t *testing.T, method, path string) *http.Response {
	t.Helper()
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w.Result()
}

// Every answer, a 404 included, carries the policy that keeps the page to
// its own files and its own gateway.
func TestServesItsFilesUnderItsPolicy(t *testing.T) {
	for path, kind := range map[string]string{
		"/console/":              "text/html",
		"/console/index.html":    "text/html",
		"/console/app.js":        "text/javascript",
		"/console/markdown.js":   "text/javascript",
		"/console/console.css":   "text/css",
		"/console/favicon.svg":   "image/svg+xml",
		"/console/schemaform.js": "text/javascript",
	} {
		resp := get(t, http.MethodGet, path)
		body, _ := io.ReadAll(resp.Body)
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), kind), "%s: %s", path, resp.Header.Get("Content-Type"))
		assert.NotEmpty(t, body, path)
		assert.Equal(t, ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"), path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
		assert.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"), path)
	}
	assert.Contains(t, ContentSecurityPolicy, "script-src 'self';")
	assert.Contains(t, ContentSecurityPolicy, "connect-src 'self';")
	assert.NotContains(t, ContentSecurityPolicy, "unsafe")
}

func TestRefusesOtherRequests(t *testing.T) {
	for _, path := range []string{"/console/nope.js", "/console/assets/app.js", "/console/../go.mod",
		"/console/%2e%2e/console.go", "/console/.", "/console//app.js", "/console/app.js/"} {
		resp := get(t, http.MethodGet, path)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		assert.Equal(t, ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"), path)
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		resp := get(t, m, "/console/")
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, m)
		assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
	}
	resp := get(t, http.MethodGet, "/console")
	require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	assert.Equal(t, Prefix, resp.Header.Get("Location"))
	resp = get(t, http.MethodHead, "/console/app.js")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// The page itself holds no inline script or style (the policy would
// block them) and loads nothing from elsewhere.
func TestPageHasNoInlineCodeOrOtherOrigins(t *testing.T) {
	for _, name := range []string{"index.html", "app.js", "rpc.js", "markdown.js", "schemaform.js", "console.css"} {
		b, err := assets.ReadFile("assets/" + name)
		require.NoError(t, err)
		s := string(b)
		assert.NotRegexp(t, `https?://`, s, "%s names another origin", name)
		assert.NotContains(t, s, "innerHTML", name)
		assert.NotContains(t, s, "outerHTML", name)
		assert.NotContains(t, s, "insertAdjacentHTML", name)
		assert.NotContains(t, s, "document.write", name)
		assert.NotContains(t, s, "eval(", name)
		if name == "index.html" {
			assert.NotRegexp(t, `<script>|<script [^>]*>[^<]|<style|style=| on[a-z]+=`, s)
		}
	}
}
