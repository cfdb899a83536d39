package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzHandlerPath: whatever path a browser asks for, the handler answers
// under the policy and serves only the console's own files.
func FuzzHandlerPath(f *testing.F) {
	for _, s := range []string{"/console/", "/console/app.js", "/console/../go.mod", "/console/%2e%2e/x",
		"/console//", "/console/assets/app.js", "/console", "/consolex", "/console/\x00"} {
		f.Add(s)
	}
	files, err := assets.ReadDir("assets")
	if err != nil {
		f.Fatal(err)
	}
	served := map[string]bool{"": true}
	for _, e := range files {
		served[e.Name()] = true
	}
	h := Handler()
	f.Fuzz(func(t *testing.T, path string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\r\n#?") {
			return
		}
		req := httptest.NewRequest(http.MethodGet, "http://localhost/", nil)
		req.URL.Path = path
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Header().Get("Content-Security-Policy") != ContentSecurityPolicy {
			t.Fatalf("%q: answered without the policy", path)
		}
		if w.Code == http.StatusOK && !served[strings.TrimPrefix(path, Prefix)] {
			t.Fatalf("%q: served something that is not one of the console's files", path)
		}
	})
}
