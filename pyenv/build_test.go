package pyenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/pyenv/pyenvtest"
)

// newBuilder makes a builder over a fresh data dir with the wheels in a
// wheelhouse; the tests run the real pip of the sandbox interpreter.
func newBuilder(t *testing.T, cfg Config, wheels ...pyenvtest.Wheel) (*Builder, *metrics.Metrics) {
	t.Helper()
	if _, err := os.Stat(DefaultPython); err != nil {
		t.Skip("no " + DefaultPython)
	}
	if cfg.FindLinks == nil {
		wh, err := pyenvtest.Wheelhouse(t.TempDir(), wheels...)
		require.NoError(t, err)
		cfg.FindLinks = []string{wh}
	}
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(t.TempDir(), "envs")
	}
	m := metrics.New("test")
	cfg.Metrics = m
	b, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b, m
}

func reqs(t *testing.T, list ...string) []Requirement {
	t.Helper()
	r, err := ParseRequirements(list)
	require.NoError(t, err)
	return r
}

func builds(m *metrics.Metrics, result string) int {
	return int(testutil.ToFloat64(m.EnvBuilds.WithLabelValues(result)))
}

func buildReqs(t *testing.T, b *Builder, list ...string) (*Env, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return b.Build(ctx, reqs(t, list...))
}

func TestBuildTwoVersionsOfOnePackage(t *testing.T) {
	b, m := newBuilder(t, Config{},
		pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"}, pyenvtest.Wheel{Name: "acme-tool", Version: "2.0.0"})
	one, err := buildReqs(t, b, "acme-tool==1.0.0")
	require.NoError(t, err)
	two, err := buildReqs(t, b, "Acme_Tool==2.0.0")
	require.NoError(t, err)
	assert.NotEqual(t, one.Key, two.Key)
	assert.Equal(t, []Dist{{"acme-tool", "1.0.0"}}, one.Installed)
	assert.Equal(t, []Dist{{"acme-tool", "2.0.0"}}, two.Installed)
	src, err := os.ReadFile(filepath.Join(two.Dir, "acme_tool", "__init__.py"))
	require.NoError(t, err)
	assert.Contains(t, string(src), `__version__ = "2.0.0"`)
	assert.Equal(t, filepath.Join(b.Dir(), one.Key), one.Dir)
	assert.Equal(t, 2, builds(m, "ok"))
	assert.Equal(t, []Conflict{{Name: "acme-tool", Versions: [2]string{"1.0.0", "2.0.0"}}}, Conflicts(one, two))

	// Read-only all the way down; nothing else left in the directory.
	require.NoError(t, filepath.Walk(one.Dir, func(p string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
		assert.Zero(t, fi.Mode().Perm()&0o222, "%s is writable", p)
		return nil
	}))
	entries, err := os.ReadDir(b.Dir())
	require.NoError(t, err)
	assert.Len(t, entries, 2, "only the two environments: the build directories are gone")
}

func TestBuildOnceThenFound(t *testing.T) {
	b, m := newBuilder(t, Config{}, pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"})
	env, err := buildReqs(t, b, "acme-tool==1.0.0")
	require.NoError(t, err)
	again, err := buildReqs(t, b, "ACME.tool == 1.0.0")
	require.NoError(t, err)
	assert.Equal(t, env.Key, again.Key)
	assert.Equal(t, 1, builds(m, "ok"), "the same requirements are built once")

	// A new builder on the same directory (a restart) finds it built.
	b2, m2 := newBuilder(t, Config{Dir: b.Dir(), FindLinks: b.cfg.FindLinks})
	found, ok := b2.Lookup(env.Key)
	require.True(t, ok)
	assert.Equal(t, env.Installed, found.Installed)
	_, err = buildReqs(t, b2, "acme-tool==1.0.0")
	require.NoError(t, err)
	assert.Zero(t, builds(m2, "ok")+builds(m2, "failed"), "a restart builds nothing")
}

func TestBuildKeyCoversSources(t *testing.T) {
	b, _ := newBuilder(t, Config{FindLinks: []string{"/srv/wheels"}})
	c, _ := newBuilder(t, Config{FindLinks: []string{"/srv/other"}})
	r := reqs(t, "acme-tool==1")
	assert.NotEqual(t, b.Key(r), c.Key(r))
	assert.Equal(t, b.Key(reqs(t, "a", "b")), b.Key(reqs(t, "b", "a")), "order does not matter")
	assert.Empty(t, b.Key(nil))
}

func TestBuildDependencies(t *testing.T) {
	b, _ := newBuilder(t, Config{},
		pyenvtest.Wheel{Name: "acme-app", Version: "1.0", Requires: []string{"acme-lib>=2"}},
		pyenvtest.Wheel{Name: "acme-lib", Version: "2.1"})
	env, err := buildReqs(t, b, "acme-app")
	require.NoError(t, err)
	assert.Equal(t, []Dist{{"acme-app", "1.0"}, {"acme-lib", "2.1"}}, env.Installed)
}

func TestBuildUnresolvable(t *testing.T) {
	b, m := newBuilder(t, Config{}, pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"})
	_, err := buildReqs(t, b, "acme-tool==9.9")
	var be *BuildError
	require.ErrorAs(t, err, &be)
	assert.ErrorIs(t, err, ErrBuildFailed)
	assert.Contains(t, be.Reason, "acme-tool==9.9", "pip's reason names the requirement")
	assert.Contains(t, be.Reason, "No matching distribution")
	assert.Equal(t, 1, builds(m, "failed"))
	assert.Empty(t, b.Built(), "a failed build leaves no environment")
	_, err = buildReqs(t, b, "acme-tool==9.9")
	assert.ErrorIs(t, err, ErrBuildFailed, "a failure is not cached: the wheelhouse may have changed")
}

func TestBuildRefusesSdist(t *testing.T) {
	wh := t.TempDir()
	_, err := pyenvtest.WriteSdist(wh, "acme-src", "1.0")
	require.NoError(t, err)
	marker := "/tmp/sdist-built-acme-src"
	_ = os.Remove(marker)
	b, m := newBuilder(t, Config{FindLinks: []string{wh}})
	_, err = buildReqs(t, b, "acme-src==1.0")
	var be *BuildError
	require.ErrorAs(t, err, &be)
	assert.Contains(t, be.Reason, "only as a source distribution (acme-src-1.0.tar.gz)")
	assert.Contains(t, be.Reason, "wheels only")
	assert.NoFileExists(t, marker, "nothing of the sdist ran")
	assert.Equal(t, 1, builds(m, "failed"))
}

func TestBuildHashes(t *testing.T) {
	wh := t.TempDir()
	_, sum, err := pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"}.Write(wh)
	require.NoError(t, err)
	b, _ := newBuilder(t, Config{FindLinks: []string{wh}})

	good, err := ParseRequirementsFile([]byte("acme-tool==1.0.0 --hash=sha256:" + sum + "\n"))
	require.NoError(t, err)
	env, err := b.Build(context.Background(), good)
	require.NoError(t, err)
	assert.Equal(t, []Dist{{"acme-tool", "1.0.0"}}, env.Installed)

	bad, err := ParseRequirementsFile([]byte("acme-tool==1.0.0 --hash=sha256:" + sha[len("sha256:"):] + "\n"))
	require.NoError(t, err)
	_, err = b.Build(context.Background(), bad)
	var be *BuildError
	require.ErrorAs(t, err, &be)
	assert.Contains(t, be.Reason, "HASHES")
	assert.Contains(t, be.Output, sum, "pip's output shows the archive's real hash")
}

func TestBuildIgnoresPipSettings(t *testing.T) {
	// Each of these, leaking into pip, would make the build fail or reach
	// elsewhere.
	t.Setenv("PIP_REQUIRE_VIRTUALENV", "1")
	t.Setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
	t.Setenv("PIP_NO_INDEX", "0")
	t.Setenv("PIP_ONLY_BINARY", ":none:")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:9")
	t.Setenv("PYTHONPATH", "/nonexistent")
	b, _ := newBuilder(t, Config{}, pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"})
	_, err := buildReqs(t, b, "acme-tool")
	require.NoError(t, err)
}

func TestBuildLimits(t *testing.T) {
	b, m := newBuilder(t, Config{Timeout: time.Nanosecond}, pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"})
	_, err := buildReqs(t, b, "acme-tool")
	var be *BuildError
	require.ErrorAs(t, err, &be)
	assert.Contains(t, be.Reason, "did not finish within 1ns")
	assert.Equal(t, 1, builds(m, "failed"))

	c, _ := newBuilder(t, Config{MemoryBytes: 8 << 20}, pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"})
	_, err = buildReqs(t, c, "acme-tool")
	assert.ErrorIs(t, err, ErrBuildFailed, "pip cannot run in 8 MiB of address space")
}

func TestBuildNeedsSources(t *testing.T) {
	b, _ := newBuilder(t, Config{FindLinks: []string{}})
	assert.False(t, b.HasSources())
	_, err := buildReqs(t, b, "acme-tool")
	assert.ErrorIs(t, err, ErrNoSources)
}

func TestRetainRemovesUnusedButNotHeld(t *testing.T) {
	b, _ := newBuilder(t, Config{},
		pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"}, pyenvtest.Wheel{Name: "acme-tool", Version: "2.0.0"})
	one, err := buildReqs(t, b, "acme-tool==1.0.0")
	require.NoError(t, err)
	two, err := buildReqs(t, b, "acme-tool==2.0.0")
	require.NoError(t, err)

	release := b.Hold(one.Key)
	b.Retain("base", []string{two.Key})
	b.Retain("skills", nil)
	assert.DirExists(t, one.Dir, "a run holds it")
	release()
	release() // idempotent
	assert.NoDirExists(t, one.Dir, "removed once the last run let go")
	assert.DirExists(t, two.Dir, "retained by another owner")
	_, ok := b.Lookup(one.Key)
	assert.False(t, ok)
	assert.Equal(t, []string{two.Key}, b.Built())

	b.Retain("base", nil)
	assert.Empty(t, b.Built())
	entries, err := os.ReadDir(b.Dir())
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing left behind")
}

func TestNewCleansInterruptedWork(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".build-x-1", "target", "pkg")
	require.NoError(t, os.MkdirAll(stale, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(stale), 0o555))
	_, _ = newBuilder(t, Config{Dir: dir, FindLinks: []string{"/w"}})
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

func TestTemporaryDirRemovedOnClose(t *testing.T) {
	if _, err := os.Stat(DefaultPython); err != nil {
		t.Skip("no " + DefaultPython)
	}
	b, err := New(Config{FindLinks: []string{"/w"}})
	require.NoError(t, err)
	require.DirExists(t, b.Dir())
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	assert.NoDirExists(t, b.Dir())
	_, err = b.Build(context.Background(), reqs(t, "x"))
	assert.True(t, errors.Is(err, ErrClosed))
}

func TestConfigValidate(t *testing.T) {
	for _, bad := range []Config{
		{FindLinks: []string{""}}, {FindLinks: []string{"ftp://x/"}}, {IndexURL: "https://"}, {IndexURL: "gopher://x"},
		{Python: "python3"}, {Timeout: -1},
	} {
		assert.Error(t, bad.Validate(), "%+v", bad)
	}
	assert.NoError(t, Config{FindLinks: []string{"wheels", "https://x/w/", "file:///w"}, IndexURL: "https://pypi.example/simple"}.Validate())
}
