package pyenv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRequirementCanonical(t *testing.T) {
	cases := map[string]string{
		"pypdf==6.16.1":                               "pypdf==6.16.1",
		"Python_DateUtil >= 2.8":                      "python-dateutil>=2.8",
		"python-dateutil (>=2.8, <3)":                 "python-dateutil<3,>=2.8",
		"requests[socks,Security]>=2":                 "requests[security,socks]>=2",
		"requests [ socks ]":                          "requests[socks]",
		"foo.bar":                                     "foo-bar",
		"foo==1.*":                                    "foo==1.*",
		"foo===weird+local":                           "foo===weird+local",
		"foo ; python_version >= '3.8'":               "foo; python_version >= '3.8'",
		`foo>=1;(os_name=="posix"  and extra == "x")`: `foo>=1; ( os_name == "posix" and extra == "x" )`,
		"foo; sys_platform not in 'win32 cygwin'":     "foo; sys_platform not in 'win32 cygwin'",
		"foo~=1.4.2,!=1.4.5":                          "foo!=1.4.5,~=1.4.2",
	}
	for in, want := range cases {
		r, err := ParseRequirement(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, r.String(), in)
	}
	a, _ := ParseRequirement("Foo_Bar>=1, <2")
	b, _ := ParseRequirement("foo-bar (<2,>=1)")
	assert.Equal(t, a.String(), b.String(), "spellings of one requirement are one requirement")
	assert.Equal(t, "Foo_Bar", a.Name, "the name as written is kept for messages")
}

func TestParseRequirementRefused(t *testing.T) {
	cases := map[string]string{
		"":                                "empty",
		"   ":                             "empty",
		"pypdf @ https://x/p.whl":         "URL requirements",
		"pypdf@https://x/p.whl":           "URL requirements",
		"./pkg":                           "a path",
		"/abs/pypdf-1.0-py3-none-any.whl": "a path",
		"pypdf-1.0.tar.gz":                "a path",
		"https://example.com/x.whl":       "a path",
		"-e .":                            "distribution name",
		"foo >>= 1":                       "not an operator",
		"foo == ":                         "not an operator",
		"foo>=1.*":                        "is not a version",
		"foo (>=1":                        "opens (",
		"foo[bar":                         "closing ]",
		"foo[b@r]":                        "is not a name",
		"foo; ":                           "empty environment marker",
		"foo; bogus == '1'":               "neither a quoted string",
		"foo; os_name == 'x":              "unterminated",
		"foo; (os_name == 'x'":            "( without )",
		"foo; os_name 'x'":                "comparison operator",
		"foo\x00":                         "control character",
		"foo; os_name == 'a' or":          "ends early",
		"foo bar":                         "not an operator",
	}
	for in, want := range cases {
		_, err := ParseRequirement(in)
		require.Error(t, err, in)
		assert.ErrorIs(t, err, ErrInvalidRequirement, in)
		assert.Contains(t, err.Error(), want, in)
	}
	_, err := ParseRequirement("foo" + strings.Repeat(";(", 40) + "os_name=='a'" + strings.Repeat(")", 40))
	assert.ErrorIs(t, err, ErrInvalidRequirement, "deep nesting is bounded")
	_, err = ParseRequirement(strings.Repeat("a", maxRequirementBytes+1))
	assert.ErrorContains(t, err, "longer than")
}

func TestParseRequirementsList(t *testing.T) {
	reqs, err := ParseRequirements([]string{"pypdf==6.16.1", "python-dateutil>=2.8"})
	require.NoError(t, err)
	require.Len(t, reqs, 2)
	_, err = ParseRequirements([]string{"pypdf==6", "PyPDF>=5"})
	assert.ErrorContains(t, err, "pypdf is already required by requirement 0")
	_, err = ParseRequirements([]string{"ok", "no good @ x"})
	assert.ErrorContains(t, err, "requirement 1")
	_, err = ParseRequirements(make([]string, MaxRequirements+1))
	assert.ErrorIs(t, err, ErrInvalidRequirement)
}

const sha = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseRequirementsFile(t *testing.T) {
	data := "# the base environment\n" +
		"pypdf==6.16.1 \\\n" +
		"    --hash=" + sha + " \\\n" +
		"    --hash " + strings.ToUpper(sha[:7]) + sha[7:] + "  # same hash, any case\n" +
		"\n" +
		"python-dateutil>=2.8   # dates\n" +
		"attrs; python_version >= '3.8' --hash=" + sha + "\n" +
		"#not#a#requirement\r\n"
	reqs, err := ParseRequirementsFile([]byte(data))
	require.NoError(t, err)
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{sha}, reqs[0].Hashes)
	assert.Equal(t, "python-dateutil>=2.8", reqs[1].String())
	assert.Equal(t, "attrs; python_version >= '3.8'", reqs[2].String())
	assert.Equal(t, "pypdf==6.16.1 --hash="+sha+"\npython-dateutil>=2.8\nattrs; python_version >= '3.8' --hash="+sha+"\n",
		string(RequirementsFile(reqs)))
	assert.True(t, hasHashes(reqs))
}

func TestParseRequirementsFileRefused(t *testing.T) {
	cases := map[string]string{
		"ok\n-e .\n":                            "line 2: option -e is not accepted here: editable",
		"-e.\n":                                 "option -e is not accepted",
		"-r other.txt\n":                        "nested requirements files",
		"-rother.txt\n":                         "nested requirements files",
		"--requirement=x\n":                     "nested requirements files",
		"-c constraints.txt\n":                  "constraints files",
		"--index-url https://pypi.org/simple\n": "the gateway's --python-index-url",
		"-i https://x\n":                        "the gateway's --python-index-url",
		"--extra-index-url https://x\n":         "the gateway's",
		"--find-links /w\n":                     "the gateway's",
		"--no-binary :all:\n":                   "wheels only",
		"--whatever\n":                          "only requirements and --hash",
		"foo --install-option=x\n":              "only --hash",
		"foo --hash=md5:abc\n":                  "is not sha256:",
		"foo --hash=sha256:abc\n":               "is not sha256:",
		"foo --hash\n":                          "needs a value",
		"foo\nbar\nFOO==1\n":                    "line 3: foo is required twice",
		"https://x/y.whl\n":                     "a path",
		"foo @ file:///w/foo.whl\n":             "URL requirements",
		"\xff\n":                                "not UTF-8",
		"a \\\n  @ https://x\n":                 "line 1:",
	}
	for in, want := range cases {
		_, err := ParseRequirementsFile([]byte(in))
		require.Error(t, err, in)
		assert.ErrorIs(t, err, ErrInvalidRequirement, in)
		assert.Contains(t, err.Error(), want, in)
	}
	_, err := ParseRequirementsFile(make([]byte, MaxRequirementsFileBytes+1))
	assert.ErrorContains(t, err, "larger than")
}

func TestParseRequirementsFileBlank(t *testing.T) {
	for _, in := range []string{"", "\n\n", "# only a comment\n", "   \\\n"} {
		reqs, err := ParseRequirementsFile([]byte(in))
		require.NoError(t, err, in)
		assert.Empty(t, reqs, in)
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{"Foo": "foo", "foo_bar": "foo-bar", "Foo.-_Bar": "foo-bar", "a--b": "a-b"} {
		assert.Equal(t, want, NormalizeName(in))
	}
}

func TestValidModuleName(t *testing.T) {
	for _, ok := range []string{"pandas", "a.b_c", "_x.y1"} {
		assert.True(t, ValidModuleName(ok), ok)
	}
	for _, bad := range []string{"", "1a", "a..b", "a.", "import", "a-b", "a b", "é"} {
		assert.False(t, ValidModuleName(bad), bad)
	}
}

func TestRunKey(t *testing.T) {
	assert.Empty(t, RunKey(nil, nil))
	k := RunKey([]string{"/a", "/b"}, []string{"pandas"})
	assert.Len(t, k, 32)
	assert.NotEqual(t, k, RunKey([]string{"/b", "/a"}, []string{"pandas"}), "search order matters")
	assert.NotEqual(t, k, RunKey([]string{"/a", "/b"}, nil))
	assert.NotEmpty(t, RunKey(nil, []string{"pandas"}))
}

func TestConflicts(t *testing.T) {
	a := &Env{Key: "a", Installed: []Dist{{"Acme_Tool", "1.0"}, {"six", "1.16"}}}
	b := &Env{Key: "b", Installed: []Dist{{"acme-tool", "2.0"}, {"six", "1.16"}}}
	assert.Equal(t, []Conflict{{Name: "acme-tool", Versions: [2]string{"1.0", "2.0"}}}, Conflicts(a, b))
	assert.Empty(t, Conflicts(a, a))
	assert.Empty(t, Conflicts(a, nil))
}
