package skills

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/pyenv"
	"github.com/skillgate/skillgate/pyenv/pyenvtest"
)

// envFixture is a builder over a wheelhouse of acme-tool 1.0.0 and 2.0.0
// and a registry option set that reports catalog changes.
type envFixture struct {
	builder *pyenv.Builder
	metrics *metrics.Metrics
	changed chan LoadReport
	sources []string
}

func newEnvFixture(t *testing.T, dataDir string, findLinks ...string) *envFixture {
	t.Helper()
	if _, err := os.Stat(pyenv.DefaultPython); err != nil {
		t.Skip("no " + pyenv.DefaultPython)
	}
	if findLinks == nil {
		wh, err := pyenvtest.Wheelhouse(t.TempDir(),
			pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"}, pyenvtest.Wheel{Name: "acme-tool", Version: "2.0.0"})
		require.NoError(t, err)
		findLinks = []string{wh}
	}
	if dataDir == "" {
		dataDir = pyenvtest.DataDir(t)
	}
	f := &envFixture{metrics: metrics.New("test"), changed: make(chan LoadReport, 16), sources: findLinks}
	b, err := pyenv.New(pyenv.Config{Dir: filepath.Join(dataDir, "envs"), FindLinks: findLinks, Metrics: f.metrics})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	f.builder = b
	return f
}

func (f *envFixture) options(root string) Options {
	return Options{Dir: root, Environments: f.builder, OnChange: func(_ *Catalog, rep LoadReport) { f.changed <- rep }}
}

// next waits for the next catalog change.
func (f *envFixture) next(t *testing.T) LoadReport {
	t.Helper()
	select {
	case rep := <-f.changed:
		return rep
	case <-time.After(2 * time.Minute):
		t.Fatal("no environment build ended")
		return LoadReport{}
	}
}

func (f *envFixture) builds(result string) int {
	return int(testutil.ToFloat64(f.metrics.EnvBuilds.WithLabelValues(result)))
}

func toolSkill(dir, name, requirement string) map[string]string {
	files := actionPackage(dir, name, "1.0.0")
	files[dir+"/skill.toml"] = withRuntimeLines(name, "1.0.0", `requirements = ["`+requirement+`"]`, `preload = ["acme_tool"]`)
	return files
}

func TestTwoSkillsPinTwoVersionsOfOnePackage(t *testing.T) {
	f := newEnvFixture(t, "")
	root := t.TempDir()
	writeTree(t, root, merge(toolSkill("one", "acme.tool.one", "acme-tool==1.0.0"), toolSkill("two", "acme.tool.two", "acme-tool==2.0.0")))
	r, _ := newRegistry(t, f.options(root))
	for r.Catalog().Len() < 3 { // the guide and both skills
		f.next(t)
	}
	cat := r.Catalog()
	one, err := cat.Resolve("acme.tool.one", "")
	require.NoError(t, err)
	two, err := cat.Resolve("acme.tool.two", "")
	require.NoError(t, err)
	assert.Equal(t, []pyenv.Dist{{Name: "acme-tool", Version: "1.0.0"}}, cat.Environment(one).Installed)
	assert.Equal(t, []pyenv.Dist{{Name: "acme-tool", Version: "2.0.0"}}, cat.Environment(two).Installed)
	assert.Equal(t, []string{"acme_tool"}, one.Preload())
	assert.Equal(t, 2, f.builds("ok"))
	assert.Empty(t, cat.Building())
}

func TestSkillOfferedOnceItsEnvironmentIsBuilt(t *testing.T) {
	url, release := pyenvtest.GatedWheelhouse(t, pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"})
	f := newEnvFixture(t, "", url)
	root := t.TempDir()
	writeTree(t, root, merge(toolSkill("tool", "acme.tool.run", "acme-tool==1.0.0"), actionPackage("plain", "acme.plain.run", "1.0.0")))
	r, _ := newRegistry(t, f.options(root))

	cat := r.Catalog()
	_, err := cat.Resolve("acme.plain.run", "")
	require.NoError(t, err, "a skill without requirements is served at once")
	_, err = cat.Resolve("acme.tool.run", "")
	var be *BuildingError
	require.ErrorAs(t, err, &be)
	assert.ErrorIs(t, err, ErrEnvironmentBuilding)
	assert.Contains(t, err.Error(), `skill "acme.tool.run" is not offered yet: its Python environment is being built`)
	_, err = cat.Resolve("acme.tool.run", "1.0.0")
	assert.ErrorIs(t, err, ErrEnvironmentBuilding)
	_, err = cat.Resolve("acme.tool.run", "9.0.0")
	assert.ErrorIs(t, err, ErrSkillNotFound, "a version that is not building is not found")
	page, err := cat.List(ListQuery{Namespace: "acme.tool"})
	require.NoError(t, err)
	assert.Empty(t, page.Skills, "not listed while building")
	assert.Equal(t, []string{"acme.tool.run@1.0.0"}, cat.Building())

	close(release)
	rep := f.next(t)
	assert.Equal(t, StatusLoaded, reportFor(t, rep, "tool").Status)
	s, err := r.Catalog().Resolve("acme.tool.run", "")
	require.NoError(t, err)
	assert.NotNil(t, r.Catalog().Environment(s))
}

func TestUnresolvableRequirementSkipsThatSkillAlone(t *testing.T) {
	f := newEnvFixture(t, "")
	root := t.TempDir()
	writeTree(t, root, merge(toolSkill("bad", "acme.tool.bad", "acme-tool==9.9"), toolSkill("good", "acme.tool.good", "acme-tool==1.0.0")))
	r, logs := newRegistry(t, f.options(root))
	var rep LoadReport
	for f.builds("ok")+f.builds("failed") < 2 {
		rep = f.next(t)
	}
	bad := reportFor(t, rep, "bad")
	assert.Equal(t, StatusSkipped, bad.Status)
	require.Len(t, bad.Violations, 1)
	assert.Contains(t, bad.Violations[0].Message, "its Python environment could not be built: ")
	assert.Contains(t, bad.Violations[0].Message, "No matching distribution found for acme-tool==9.9")
	assert.Equal(t, "/runtime/requirements", bad.Violations[0].Field)
	assert.Equal(t, 1, f.builds("failed"))
	_, err := r.Catalog().Resolve("acme.tool.bad", "")
	assert.ErrorIs(t, err, ErrSkillNotFound)
	_, err = r.Catalog().Resolve("acme.tool.good", "")
	assert.NoError(t, err)
	assert.Contains(t, logs.String(), "skill environment build failed; skill skipped")

	// A reload tries again (the wheelhouse may have gained the wheel).
	rep, err = r.Reload()
	require.NoError(t, err)
	assert.Equal(t, StatusBuilding, reportFor(t, rep, "bad").Status)
	f.next(t)
	assert.Equal(t, 2, f.builds("failed"))
}

func TestReloadOfAChangedRequirement(t *testing.T) {
	f := newEnvFixture(t, "")
	root := t.TempDir()
	writeTree(t, root, toolSkill("tool", "acme.tool.run", "acme-tool==1.0.0"))
	r, _ := newRegistry(t, f.options(root))
	f.next(t)
	s, err := r.Catalog().Resolve("acme.tool.run", "")
	require.NoError(t, err)
	old := r.Catalog().Environment(s)
	require.NotNil(t, old)

	writeTree(t, root, toolSkill("tool", "acme.tool.run", "acme-tool==2.0.0"))
	rep, err := r.Reload()
	require.NoError(t, err)
	assert.Equal(t, StatusBuilding, reportFor(t, rep, "tool").Status)
	f.next(t)
	s, err = r.Catalog().Resolve("acme.tool.run", "")
	require.NoError(t, err)
	env := r.Catalog().Environment(s)
	require.NotNil(t, env)
	assert.NotEqual(t, old.Key, env.Key)
	assert.Equal(t, "2.0.0", env.Installed[0].Version)
	assert.NoDirExists(t, old.Dir, "the environment no skill uses is removed")
	assert.Equal(t, []string{env.Key}, f.builder.Built())

	// An unchanged reload builds nothing.
	_, err = r.Reload()
	require.NoError(t, err)
	assert.Equal(t, 2, f.builds("ok"))
}

func TestRestartDoesNotRebuild(t *testing.T) {
	data := pyenvtest.DataDir(t)
	f := newEnvFixture(t, data)
	root := t.TempDir()
	writeTree(t, root, toolSkill("tool", "acme.tool.run", "acme-tool==1.0.0"))
	r, _ := newRegistry(t, f.options(root))
	f.next(t)
	require.NoError(t, r.Close())
	require.NoError(t, f.builder.Close())

	g := newEnvFixture(t, data, f.sources...) // the same sources, or the keys would differ
	r2, _ := newRegistry(t, g.options(root))
	s, err := r2.Catalog().Resolve("acme.tool.run", "")
	require.NoError(t, err, "offered in the first catalog: its environment is on disk")
	assert.NotNil(t, r2.Catalog().Environment(s))
	assert.Zero(t, g.builds("ok")+g.builds("failed"))
}

func TestCheckBuildsEnvironments(t *testing.T) {
	f := newEnvFixture(t, "")
	root := t.TempDir()
	writeTree(t, root, merge(toolSkill("bad", "acme.tool.bad", "acme-tool==9.9"), toolSkill("good", "acme.tool.good", "acme-tool==1.0.0")))
	rep, err := Check(root, Options{Environments: f.builder})
	require.NoError(t, err)
	assert.Equal(t, StatusLoaded, reportFor(t, rep, "good").Status)
	bad := reportFor(t, rep, "bad")
	assert.Equal(t, StatusSkipped, bad.Status)
	assert.Contains(t, joinViolations(bad.Violations), "No matching distribution found for acme-tool==9.9")
	assert.Equal(t, 1, rep.Skills)
}
