package skills

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An entrypoint is a clean relative path to a .py file; each other shape
// gets its own message.
func TestEntrypointShapes(t *testing.T) {
	manifest := func(ep string) []byte {
		return []byte("name = \"acme.ep\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"action\"\n" +
			"[runtime]\nlanguage = \"python\"\nentrypoint = " + ep + "\nexport = \"main\"\n")
	}
	for ep, want := range map[string]string{
		`"code/main.py"`:       "",
		`"main.py"`:            "",
		`"code\\main.py"`:      "not a clean relative path inside the package",
		`"code/main\u0000.py"`: "not a clean relative path inside the package",
		`"/code/main.py"`:      "not a clean relative path inside the package",
		`"code/../main.py"`:    "not a clean relative path inside the package",
		`"."`:                  "not a clean relative path inside the package",
		`"code/main.txt"`:      "entrypoint must be a .py file",
		`"code/main"`:          "entrypoint must be a .py file",
		`"code/main.py/"`:      "not a clean relative path inside the package",
	} {
		_, vs := ParseManifest(manifest(ep))
		if want == "" {
			assert.Empty(t, vs, ep)
			continue
		}
		if assert.Len(t, vs, 1, "%s: %v", ep, vs) {
			assert.Equal(t, "/runtime/entrypoint", vs[0].Field, ep)
			assert.Equal(t, want, vs[0].Message, ep)
		}
	}
}

// A root that can no longer be read fails the reload and keeps the
// catalog served; a watcher reports the failure in the log.
func TestReloadOfVanishedRoot(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, actionPackage("a", "acme.gone.a", "1.0.0"))
	r, logs := newRegistry(t, Options{Dir: root})
	w := testWatcher(t, r)
	errs := make(chan error, 1)
	go w.loop(nil, errs)
	defer func() { require.NoError(t, w.close()) }()

	require.NoError(t, os.RemoveAll(root))
	_, err := r.Reload()
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "reload skills: ")
	_, err = r.Catalog().Resolve("acme.gone.a", "")
	require.NoError(t, err, "the last catalog stays served")

	errs <- os.ErrClosed
	require.Eventually(t, func() bool {
		return len(logLines(t, logs, "skills reload after file change failed")) == 1
	}, eventually, tick)
}
