package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/skillgate/skillgate"

// allowed lists, for every package of the module on its own, the project
// packages its non-test code may import. Dependencies point one way:
// transport <- session <- framedfront -> dispatch -> skills; the front
// doors framedfront, httpfront and mcpfront sit on dispatch, which knows
// none of them (TestDispatchImportsNoFront); sandbox, metrics and
// dispatch/auth and runs are leaves the others receive by injection; console
// is static files the HTTP listener serves, knowing no other package; internal/pyname
// holds the Python naming facts that skills, dispatch and sandbox all check,
// and internal/runerror the error types of a failed run that sandbox, runs
// and dispatch all report, so that none of them needs another for it;
// egress/hostpattern parses the destination patterns skills and
// dispatch/auth validate, without the proxy. sandbox/internal/... are the
// sandbox's own pieces, split along the processes that run them (see
// sandbox/doc.go): only sandbox uses them, and none of them knows the
// gateway side. A package missing here fails
// the test: a new package states its place in the graph when it is added.
var allowed = map[string][]string{
	"transport":               {},
	"metrics":                 {},
	"internal/pyname":         {},
	"internal/runerror":       {},
	"internal/testpki":        {},
	"internal/testchild":      {},
	"internal/testlog":        {},
	"internal/scaleouttest":   {},
	"internal/archtest":       {},
	"internal/mutrecheck":     {},
	"internal/skipcheck":      {},
	"dispatch/auth":           {"egress/hostpattern"},
	"runs":                    {"internal/runerror"},
	"runs/runstest":           {"runs"},
	"runs/objstore":           {"runs", "blob"},
	"sandbox":                 {"internal/pyname", "internal/runerror", "sandbox/internal/cgroup", "sandbox/internal/pid1", "sandbox/internal/wire"},
	"sandbox/internal/cgroup": {},
	"sandbox/internal/pid1":   {"sandbox/internal/wire"},
	"sandbox/internal/wire":   {},
	"pyenv":                   {"internal/pyname", "metrics"},
	"pyenv/pyenvtest":         {},
	"egress":                  {"metrics", "egress/hostpattern"},
	"egress/hostpattern":      {},
	"skills":                  {"internal/pyname", "egress/hostpattern", "pyenv"},
	"blob":                    {},
	"blob/blobtest":           {"blob"},
	"blob/s3blob":             {"blob"},
	"session":                 {"transport", "metrics"},
	"dispatch":                {"transport", "metrics", "skills", "blob", "sandbox", "dispatch/auth", "internal/pyname", "internal/runerror", "egress", "egress/hostpattern", "runs", "pyenv"},
	"framedfront":             {"transport", "session", "metrics", "dispatch", "dispatch/auth"},
	"httpfront":               {"transport", "session", "metrics", "dispatch", "dispatch/auth"},
	"console":                 {},
	"mcpfront":                {"transport", "metrics", "skills", "blob", "dispatch", "dispatch/auth", "runs"},
	"deploy":                  {"internal/scaleouttest"},
	"cmd/skillgate":           {"transport", "session", "metrics", "skills", "blob", "blob/s3blob", "sandbox", "dispatch", "dispatch/auth", "framedfront", "httpfront", "mcpfront", "console", "egress", "egress/hostpattern", "internal/runerror", "runs", "runs/objstore", "pyenv"},
	"cmd/skillgate-bench":     {"transport", "session", "internal/testpki"},
}

// stdlibOnly packages import nothing outside the standard library.
var stdlibOnly = []string{"transport", "egress/hostpattern", "internal/pyname", "internal/runerror", "internal/archtest", "internal/mutrecheck", "internal/skipcheck"}

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

// fronts are the front doors and what only they build on: the framed
// connection layer (session) belongs to the framed front door.
var fronts = []string{"session", "framedfront", "httpfront", "mcpfront", "console"}

// TestDispatchImportsNoFront keeps dispatch front-neutral: every front
// door reaches it through dispatch.Caller and dispatch.Front, so that a new
// front attaches without dispatch knowing it. Checked on everything
// dispatch depends on, not only its direct imports.
func TestDispatchImportsNoFront(t *testing.T) {
	for _, pkg := range []string{"dispatch", "dispatch/auth"} {
		out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).Output()
		require.NoError(t, err)
		for _, dep := range strings.Fields(string(out)) {
			assert.NotContains(t, fronts, rel(dep), "%s must not depend on the front door package %s", pkg, rel(dep))
		}
	}
}

// egressProxy is the egress proxy package: the packages that only validate
// destination patterns (a skill's manifest, a credential's grants) use
// egress/hostpattern, so that they carry neither the proxy nor its
// metrics.
const egressProxy = module + "/egress"

func TestPatternUsersSkipTheProxy(t *testing.T) {
	for _, pkg := range []string{"skills", "dispatch/auth", "egress/hostpattern"} {
		out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).Output()
		require.NoError(t, err)
		assert.NotContains(t, strings.Fields(string(out)), egressProxy,
			"%s must not depend on %s, even indirectly: parse patterns with egress/hostpattern", pkg, egressProxy)
	}
}

// codeCatalogue is the file that defines the application string codes.
const codeCatalogue = "dispatch/codes.go"

// runErrorTypes is the package of a failed run's error types. Two of them
// are spelled like an application code (CANCELLED, STORAGE_FULL) because a
// run meets the same condition as a call; they are another vocabulary (a
// run result's error.type), so the package is exempt.
const runErrorTypes = "internal/runerror"

// appCodes returns the string values of the constants of codeCatalogue.
func appCodes(t *testing.T) map[string]string {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", codeCatalogue), nil, 0)
	require.NoError(t, err)
	codes := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			for i, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					codes[s] = vs.Names[i].Name
				}
			}
		}
		return true
	})
	require.NotEmpty(t, codes, "%s defines no string constants", codeCatalogue)
	return codes
}

// TestAppCodesOnlyInDispatch: no package below dispatch (one that does
// not import it, the binaries aside) defines or spells an application
// string code; such a package returns a Go error and dispatch's error
// table maps it to its code, so that each code has one definition and one
// sender.
func TestAppCodesOnlyInDispatch(t *testing.T) {
	codes := appCodes(t)
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{.Dir}} {{join .Deps " "}}`, module+"/...").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, dir := rel(fields[0]), fields[1]
		if pkg == "dispatch" || pkg == runErrorTypes || strings.HasPrefix(pkg, "cmd/") ||
			slices.Contains(fields[2:], module+"/dispatch") {
			continue
		}
		for _, lit := range stringLiterals(t, dir) {
			if name, ok := codes[lit.value]; ok {
				t.Errorf("%s: %q is dispatch.%s: packages below dispatch return errors and leave the codes to dispatch", lit.pos, lit.value, name)
			}
		}
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

type literal struct{ pos, value string }

// stringLiterals returns the string literals of the non-test Go files
// of dir.
func stringLiterals(t *testing.T, dir string) []literal {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	fset := token.NewFileSet()
	var lits []literal
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					lits = append(lits, literal{fset.Position(lit.Pos()).String(), s})
				}
			}
			return true
		})
	}
	return lits
}
