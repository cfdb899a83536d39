package deploy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	makefilePath    = "../Makefile"
	distScript      = "../.ci/dist"
	containerIgnore = "container/Containerfile.dockerignore"
	mainPackage     = "./cmd/skillgate"
)

var ldflagVars = regexp.MustCompile(`-X (main\.[A-Za-z_]+)=`)

// TestReleaseBuildsAlike: make build, make dist (.ci/dist) and the
// container image build the same package with the same stamps (-X
// main.version and main.commit, variables that exist), trimmed paths and,
// for what ships, no cgo; and the image's build context holds what the
// build needs.
func TestReleaseBuildsAlike(t *testing.T) {
	vars := mainVars(t)
	check := func(where, ldflags string) {
		t.Helper()
		stamped := ldflagVars.FindAllStringSubmatch(ldflags, -1)
		var names []string
		for _, m := range stamped {
			names = append(names, m[1])
		}
		assert.ElementsMatch(t, []string{"main.version", "main.commit"}, names, "%s stamps the version and the commit", where)
		for _, n := range names {
			assert.Contains(t, vars, strings.TrimPrefix(n, "main."), "%s sets %s, which cmd/skillgate must declare", where, n)
		}
		assert.Contains(t, ldflags, "-s -w", "%s strips the binary", where)
	}

	mk := readFile(t, makefilePath)
	ld := regexp.MustCompile(`(?m)^LDFLAGS\s*:=\s*(.+)$`).FindStringSubmatch(mk)
	require.NotNil(t, ld, "the Makefile sets LDFLAGS")
	check("the Makefile's LDFLAGS", ld[1])
	assert.Regexp(t, `(?m)^build:.*\n\t\$\(GO\) build -trimpath -ldflags '\$\(LDFLAGS\)' -o \$\(BIN\) `+regexp.QuoteMeta(mainPackage)+`$`, mk)
	assert.Regexp(t, `(?m)^dist:.*\n\t.*\./\.ci/dist$`, mk, "make dist runs .ci/dist")

	dist := readFile(t, distScript)
	st, err := os.Stat(distScript)
	require.NoError(t, err)
	assert.NotZero(t, st.Mode().Perm()&0o100, ".ci/dist is executable")
	distLD := regexp.MustCompile(`-ldflags "([^"]+)"`).FindStringSubmatch(dist)
	require.NotNil(t, distLD, ".ci/dist passes -ldflags")
	check(".ci/dist", distLD[1])
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", mainPackage, `PLATFORMS="linux/amd64 linux/arm64"`, "sha256sum", "npm pack", "build_wheel"} {
		assert.Contains(t, dist, want, ".ci/dist")
	}

	cf := parseContainerfile(readFile(t, containerPath))
	i := slices.IndexFunc(cf["RUN"], func(a string) bool { return strings.Contains(a, "go build") })
	require.GreaterOrEqual(t, i, 0, "the image's build stage runs go build")
	build := cf["RUN"][i]
	cLD := regexp.MustCompile(`-ldflags "([^"]+)"`).FindStringSubmatch(build)
	require.NotNil(t, cLD, "the image's go build passes -ldflags")
	check("the Containerfile", cLD[1])
	assert.Contains(t, build, "-trimpath")
	assert.True(t, strings.HasSuffix(build, " "+mainPackage), "the image builds %s: %s", mainPackage, build)
	assert.Equal(t, "0", cf.env()["CGO_ENABLED"], "the image's binary is static")
	for _, arg := range []string{"VERSION", "COMMIT"} {
		assert.True(t, slices.ContainsFunc(cf["ARG"], func(a string) bool { return strings.HasPrefix(a, arg) }), "ARG %s", arg)
	}
	for _, cp := range cf["COPY"] {
		f := strings.Fields(cp)
		if strings.HasPrefix(f[0], "--from") {
			continue
		}
		for _, src := range f[:len(f)-1] {
			_, err := os.Stat(filepath.Join("..", src))
			assert.NoError(t, err, "COPY %s: the source exists", src)
		}
	}
	assert.DirExists(t, filepath.Join("..", mainPackage))
	checkBuildContext(t)
}

// checkBuildContext: no package the gateway is built from lies under a
// folder the image's build context leaves out.
func checkBuildContext(t *testing.T) {
	var excluded []string
	for _, line := range strings.Split(readFile(t, containerIgnore), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && !strings.ContainsAny(line, "*!") {
			excluded = append(excluded, strings.TrimSuffix(line, "/"))
		}
	}
	require.NotEmpty(t, excluded)
	list := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", mainPackage)
	list.Dir = ".."
	out, err := list.Output()
	require.NoError(t, err)
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a module dependency, downloaded in the image
		}
		for _, ex := range excluded {
			assert.False(t, rel == ex || strings.HasPrefix(rel, ex+"/"), "the image builds from %s, which the build context leaves out (%s)", rel, ex)
		}
	}
}

// mainVars are the package-level variables of cmd/skillgate.
func mainVars(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", mainPackage, "*.go"))
	require.NoError(t, err)
	var vars []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range file.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, s := range g.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						vars = append(vars, n.Name)
					}
				}
			}
		}
	}
	return vars
}
