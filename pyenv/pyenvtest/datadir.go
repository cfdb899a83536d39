package pyenvtest

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// DataDir is a temporary data directory for a gateway that builds
// environments. Built environments are read-only trees, which only root
// may remove as they are: the directory's directories regain their write
// bit before the test's temporary directories are removed, so that the
// tests clean up as an unprivileged user too.
func DataDir(t testing.TB) string {
	dir := t.TempDir()
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	return dir
}

// GatedWheelhouse serves a wheelhouse of wheels over loopback HTTP and
// holds its index page until release is closed: a build that stays in
// progress as long as the test wants. It returns the find-links URL.
func GatedWheelhouse(t testing.TB, wheels ...Wheel) (url string, release chan struct{}) {
	t.Helper()
	wh, err := Wheelhouse(t.TempDir(), wheels...)
	if err != nil {
		t.Fatal(err)
	}
	release = make(chan struct{})
	files := http.FileServer(http.Dir(wh))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/" {
			select {
			case <-release:
			case <-req.Context().Done():
				return
			}
		}
		files.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/", release
}
