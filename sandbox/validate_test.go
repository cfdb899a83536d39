package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckSkillName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"acme.math.add", true}, {"acme", true}, {"a_b.c2", true}, {"Acme.X", true},
		{"", false}, {"acme..add", false}, {".acme", false}, {"acme.", false}, {"acme.1x", false},
		{"acme.class", false}, {"acme-x.y", false}, {"acme/x", false}, {"acme.ü", false},
		{strings.Repeat("a", maxNameLen+1), false},
		// Every bound exactly: 128 bytes, and each end of each character range.
		{strings.Repeat("a", 128), true}, {"Z" + strings.Repeat("a", 127), true}, {"Z" + strings.Repeat("a", 128), false},
		{"az.AZ._09", true}, {"a`", false}, {"a{", false}, {"A@", false}, {"A[", false}, {"a/", false}, {"a:", false},
		{"_", true}, {"x9", true}, {"9X", false},
		// Agent Skills names: lowercase, digits, single inner hyphens.
		{"pdf-forms", true}, {"a-0-z9", true}, {"-pdf", false}, {"pdf-", false}, {"pdf--forms", false},
		{"pdf-`", false}, {"pdf-{", false}, {"pdf-/", false}, {"pdf-:", false},
	} {
		err := checkSkillName(tc.name)
		assert.Equal(t, tc.ok, err == nil, "%q: %v", tc.name, err)
	}
}

func TestCheckFilePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"code/main.py", true}, {"SKILL.md", true}, {"resources/a b.txt", true}, {".hidden", true},
		{"", false}, {"/etc/passwd", false}, {"../x", false}, {"a/../b", false}, {"a/./b", false},
		{"a//b", false}, {"a/", false}, {"a\\b", false}, {"a\x00b", false}, {"a\nb", false},
		{strings.Repeat("a", 256), false}, {strings.Repeat("a/", 600) + "a", false},
		// Exactly at the bounds: a 255-byte segment, a 1024-byte path.
		{strings.Repeat("a", 255), true}, {strings.Repeat(strings.Repeat("a", 200)+"/", 5) + strings.Repeat("b", 19), true},
		{strings.Repeat(strings.Repeat("a", 200)+"/", 5) + strings.Repeat("b", 20), false},
		{"a\x1fb", false}, {"a~b", true}, {"a\x7fb", false},
	} {
		err := checkFilePath(tc.path)
		assert.Equal(t, tc.ok, err == nil, "%q: %v", tc.path, err)
	}
}

func TestModulePath(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"code/main.py", "code.main"}, {"main.py", "main"}, {"code/lib/__init__.py", "code.lib"},
		{"code/main.txt", ""}, {"code/my-mod.py", ""}, {"code/class.py", ""}, {"../x.py", ""}, {".py", ""},
		{"__init__.py", "__init__"}, // a top-level __init__ is a module, not a package
	} {
		got, err := modulePath(tc.path)
		if tc.want == "" {
			assert.Error(t, err, tc.path)
			continue
		}
		require.NoError(t, err, tc.path)
		assert.Equal(t, tc.want, got)
	}
}

func TestCheckBlobIDKindEnv(t *testing.T) {
	for id, ok := range map[string]bool{
		"blob:sheet-123": true, "b": true, "blob:a.b_c@d+e=f": true,
		"": false, ":x": false, "blob:a/b": false, "blob a": false, "blob:\n": false,
		strings.Repeat("x", maxBlobIDLen+1): false, strings.Repeat("x", 256): true,
		"azAZ09": true, "a`": false, "a{": false, "A@b": true, "@b": false, "A[": false, "a/": false, "9:": true,
		"a._:@+=-": true, ".a": false, "-a": false,
	} {
		assert.Equal(t, ok, checkBlobID(id) == nil, "%q", id)
	}
	for kind, ok := range map[string]bool{
		"text/plain": true, "application/json; charset=utf-8": true,
		"plain": false, "/x": false, "text/\x01": false, "text/ü": false,
		"text/" + strings.Repeat("x", 250): true, "text/" + strings.Repeat("x", 251): false,
		"text/\x1f": false, "text/ ~": true, "text/\x7f": false,
	} {
		assert.Equal(t, ok, checkKind(kind, false) == nil, "%q", kind)
	}
	assert.NoError(t, checkKind("", true))
	assert.Error(t, checkKind("", false))
	assert.NoError(t, checkEnv(map[string]string{"ACME_API_KEY": "x", "_A1": ""}))
	assert.NoError(t, checkEnv(map[string]string{"azAZ_09": "x", strings.Repeat("K", 256): strings.Repeat("v", 64<<10)}), "exactly at the bounds")
	entries := map[string]string{}
	for i := range 256 {
		entries["V"+strings.Repeat("_", i)] = ""
	}
	assert.NoError(t, checkEnv(entries), "256 variables")
	entries["W"] = ""
	assert.ErrorContains(t, checkEnv(entries), "more than 256 environment variables")
	for _, key := range []string{strings.Repeat("K", 257), "A`", "A{", "A@", "A[", "A/", "A:", "9A"} {
		assert.ErrorContains(t, checkEnv(map[string]string{key: ""}), "is invalid", "%q", key)
	}
	for _, env := range []map[string]string{
		{"": "x"}, {"1A": "x"}, {"A-B": "x"}, {"A": "x\x00y"}, {"A": "\x00"}, {"HOME": "/"}, {"A": strings.Repeat("x", maxEnvValueLen+1)},
	} {
		assert.Error(t, checkEnv(env), "%q", env)
	}
}

func TestTruncate(t *testing.T) {
	assert.Equal(t, "abc", truncate("abc", 5))
	assert.Equal(t, "ab", truncate("abc", 2))
	assert.Equal(t, "", truncate("é", 1), "never splits a UTF-8 sequence")
	assert.Equal(t, "a", truncate("aé", 2))
	assert.Equal(t, "abc", truncate("abc", 3), "exactly n bytes")
	assert.Equal(t, "aé", truncate("aé", 3))
	assert.Equal(t, "", truncate("\x80\x80\x80", 2), "continuation bytes from the start: nothing is left")
}

func FuzzCheckFilePath(f *testing.F) {
	for _, s := range []string{"code/main.py", "../x", "/abs", "a//b", "a\\b", "ü/ä.py", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if checkFilePath(p) != nil {
			return
		}
		// An accepted path stays below its root whatever it is joined to.
		for _, seg := range strings.Split(p, "/") {
			if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, "\\\x00") {
				t.Fatalf("accepted %q", p)
			}
		}
		if mod, err := modulePath(p); err == nil {
			for _, seg := range strings.Split(mod, ".") {
				require.NoError(t, checkIdentifier(seg), "module %q from %q", mod, p)
			}
		}
	})
}

func FuzzCheckSkillName(f *testing.F) {
	for _, s := range []string{"acme.math.add", "a..b", "class.x", "ä.b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if checkSkillName(name) != nil {
			return
		}
		// Accepted names are usable as a directory name and an import path.
		require.NoError(t, checkFilePath(name))
		assert.NotContains(t, name, "/")
	})
}
