package archtest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/skillgate/skillgate"

// allowed lists, for every package of the module on its own, the project
// packages its non-test code may import. Dependencies point one way:
// transport <- session <- dispatch -> skills; the front doors httpfront
// and mcpfront sit on dispatch; sandbox, metrics and
// dispatch/auth and runs are leaves the others receive by injection; console
// is static files the HTTP listener serves, knowing no other package; internal/pyname
// holds the Python naming facts that skills, dispatch and sandbox all check,
// so that none of them needs another for it. sandbox/internal/... are the
// sandbox's own pieces, split along the processes that run them (see
// sandbox/doc.go): only sandbox uses them, and none of them knows the
// gateway side. A package missing here fails
// the test: a new package states its place in the graph when it is added.
var allowed = map[string][]string{
	"transport":               {},
	"metrics":                 {},
	"internal/pyname":         {},
	"internal/testpki":        {},
	"internal/testchild":      {},
	"internal/testlog":        {},
	"internal/scaleouttest":   {},
	"internal/archtest":       {},
	"internal/mutrecheck":     {},
	"internal/skipcheck":      {},
	"dispatch/auth":           {"egress"},
	"runs":                    {},
	"runs/runstest":           {"runs"},
	"runs/objstore":           {"runs", "blob"},
	"sandbox":                 {"internal/pyname", "sandbox/internal/cgroup", "sandbox/internal/pid1", "sandbox/internal/wire"},
	"sandbox/internal/cgroup": {},
	"sandbox/internal/pid1":   {"sandbox/internal/wire"},
	"sandbox/internal/wire":   {},
	"pyenv":                   {"internal/pyname", "metrics"},
	"pyenv/pyenvtest":         {},
	"egress":                  {"metrics"},
	"skills":                  {"internal/pyname", "egress", "pyenv"},
	"blob":                    {},
	"blob/blobtest":           {"blob"},
	"blob/s3blob":             {"blob"},
	"session":                 {"transport", "metrics"},
	"dispatch":                {"transport", "session", "metrics", "skills", "blob", "sandbox", "dispatch/auth", "internal/pyname", "egress", "runs", "pyenv"},
	"httpfront":               {"transport", "session", "metrics", "dispatch", "dispatch/auth"},
	"console":                 {},
	"mcpfront":                {"transport", "metrics", "skills", "blob", "dispatch", "dispatch/auth"},
	"deploy":                  {"internal/scaleouttest"},
	"cmd/skillgate":           {"transport", "session", "metrics", "skills", "blob", "blob/s3blob", "sandbox", "dispatch", "dispatch/auth", "httpfront", "mcpfront", "console", "egress", "runs", "runs/objstore", "pyenv"},
	"cmd/skillgate-bench":     {"transport", "session", "internal/testpki"},
}

// stdlibOnly packages import nothing outside the standard library.
var stdlibOnly = []string{"transport", "internal/pyname", "internal/archtest", "internal/mutrecheck", "internal/skipcheck"}

// onlyInCmd are modules only the binaries may use.
var onlyInCmd = []string{"github.com/spf13/viper", "github.com/spf13/cobra"}

// pkgImports maps each package of the module (relative path) to its
// non-test imports.
func pkgImports(t *testing.T) map[string][]string {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	require.NoError(t, err)
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkgs[rel(fields[0])] = fields[1:]
	}
	return pkgs
}

// rel turns an import path of the module into its relative path; other
// paths come back unchanged.
func rel(imp string) string {
	if imp == module {
		return "."
	}
	return strings.TrimPrefix(imp, module+"/")
}

func TestDependencyDirection(t *testing.T) {
	for pkg, imports := range pkgImports(t) {
		rules, listed := allowed[pkg]
		if !assert.True(t, listed, "package %s has no entry in allowed: add it with the project packages it may import", pkg) {
			continue
		}
		for _, imp := range imports {
			if dep := rel(imp); dep != imp || imp == module {
				assert.True(t, slices.Contains(rules, dep), "%s must not import %s", pkg, dep)
			}
			for _, m := range onlyInCmd {
				if strings.HasPrefix(imp, m) {
					assert.True(t, strings.HasPrefix(pkg, "cmd/"), "%s must not import %s: configuration lives in cmd", pkg, imp)
				}
			}
			if slices.Contains(stdlibOnly, pkg) {
				assert.NotContains(t, strings.Split(imp, "/")[0], ".", "%s must use the standard library only, not %s", pkg, imp)
			}
		}
	}
}

// TestAllowedNamesRealPackages keeps the table honest: an entry for a
// package that no longer exists would hide a rename.
func TestAllowedNamesRealPackages(t *testing.T) {
	pkgs := pkgImports(t)
	for pkg, deps := range allowed {
		assert.Contains(t, pkgs, pkg, "allowed lists %s, which is not a package of the module", pkg)
		for _, d := range deps {
			assert.Contains(t, pkgs, d, "allowed[%s] lists %s, which is not a package of the module", pkg, d)
		}
	}
}

// s3Client is the S3 client module: only the S3 blob backend talks to
// object storage, so that the gateway's other packages (and every program
// built without that backend) stay free of it.
const s3Client = "github.com/minio/minio-go"

func TestS3ClientOnlyInS3Backend(t *testing.T) {
	for pkg, imports := range pkgImports(t) {
		for _, imp := range imports {
			if strings.HasPrefix(imp, s3Client) {
				assert.Equal(t, "blob/s3blob", pkg, "%s must not import %s: only blob/s3blob talks to S3", pkg, imp)
			}
		}
	}
	for _, pkg := range []string{"blob", "blob/blobtest", "dispatch", "skills", "session", "transport", "sandbox", "metrics"} {
		out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).Output()
		require.NoError(t, err)
		assert.NotContains(t, string(out), s3Client, "%s must not depend on %s, even indirectly", pkg, s3Client)
	}
}

// sandboxInternal is the prefix of the sandbox's own packages.
const sandboxInternal = "sandbox/internal/"

// The sandbox's pieces stay behind package sandbox, whose API is the only
// way in (Go's internal rule says as much for the code; this says it for
// the reader), and none of them imports the gateway side: not sandbox,
// nor a front, nor dispatch.
func TestSandboxPiecesStayInside(t *testing.T) {
	for pkg, imports := range pkgImports(t) {
		for _, imp := range imports {
			dep := rel(imp)
			if strings.HasPrefix(dep, sandboxInternal) {
				assert.True(t, pkg == "sandbox" || strings.HasPrefix(pkg, sandboxInternal),
					"%s must not import %s: only package sandbox uses its pieces", pkg, dep)
			}
			if strings.HasPrefix(pkg, sandboxInternal) && dep != imp {
				assert.True(t, strings.HasPrefix(dep, sandboxInternal),
					"%s must not import %s: the sandbox's pieces know nothing of the gateway", pkg, dep)
			}
		}
	}
}
