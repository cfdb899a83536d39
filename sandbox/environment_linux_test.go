package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/runerror"
)

// envDir makes an installed-packages directory named name (a pip --target
// layout: modules at its top) holding files, under a private parent: the
// sandbox reaches it only through the descriptor the host passes.
func envDir(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.Mkdir(dir, 0o755))
	for p, data := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644))
	}
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o700))
	return dir
}

func withEnvironment(env Environment) func(*Job) { return func(j *Job) { j.Environment = env } }

// eachStartPath runs body with a Runner that forks sandboxes from a
// template and with one that starts each from scratch.
func eachStartPath(t *testing.T, edit func(*Config), body func(t *testing.T, r *Runner)) {
	for _, mode := range []TemplateMode{TemplateOn, TemplateOff} {
		t.Run(string(mode), func(t *testing.T) {
			body(t, ownRunner(t, func(c *Config) {
				c.Template = mode
				if edit != nil {
					edit(c)
				}
			}))
		})
	}
}

const envProbeCode = `
import os, subprocess, sys
def main(args):
    import envprobe, onlyb
    sub = subprocess.run([sys.executable, "-c", "import envprobe; print(envprobe.VALUE)"],
                         capture_output=True, text=True)
    try:
        open(os.path.join(os.path.dirname(envprobe.__file__), "x"), "w")
        writable = True
    except OSError:
        writable = False
    return {"value": envprobe.VALUE, "file": envprobe.__file__, "onlyb": onlyb.VALUE,
            "sub": sub.stdout.strip() or sub.stderr, "pythonpath": os.environ.get("PYTHONPATH", ""),
            "mounted": sorted(os.listdir("/opt/env")), "writable": writable}
`

// A run sees its environment's packages first (in its own process and in
// the Python processes it starts), in the environment's order, read-only,
// on both start paths; a run without one sees none of them.
func TestEnvironmentPackagesComeFirst(t *testing.T) {
	first := envDir(t, "env-first", map[string]string{"envprobe.py": "VALUE = 'first'\n"})
	second := envDir(t, "env-second", map[string]string{"envprobe.py": "VALUE = 'second'\n", "onlyb/__init__.py": "VALUE = 'b'\n"})
	env := Environment{Key: "first+second", Paths: []string{first, second}}
	eachStartPath(t, nil, func(t *testing.T, r *Runner) {
		out := output(t, run(t, r, envProbeCode, nil, withEnvironment(env)))
		assert.Equal(t, "first", out["value"])
		assert.Equal(t, "/opt/env/env-first/envprobe.py", out["file"])
		assert.Equal(t, "b", out["onlyb"])
		assert.Equal(t, "first", out["sub"], "a Python process the run starts")
		assert.Equal(t, "/opt/env/env-first:/opt/env/env-second", out["pythonpath"])
		assert.Equal(t, []any{"env-first", "env-second"}, out["mounted"])
		assert.Equal(t, false, out["writable"])

		res := run(t, r, "python3 -c 'import envprobe; print(\"bash sees\", envprobe.VALUE)'", nil,
			withEnvironment(env), func(j *Job) { j.Language = LanguageBash })
		requireCompleted(t, res)
		assert.Contains(t, res.Logs, "bash sees first")

		res = run(t, r, "import envprobe\ndef main(args):\n    return {}\n", nil)
		requireFailed(t, res, "ModuleNotFoundError")
		assert.Contains(t, res.Error.Message, "No module named 'envprobe'", "a run without the environment")
		assertHealthyAndClean(t, r)
	})
}

// What a Job's environment must be, checked before any sandbox starts.
func TestEnvironmentIsValidated(t *testing.T) {
	dir := envDir(t, "env-ok", nil)
	r := sharedRunner(t)
	for _, c := range []struct {
		env  Environment
		want string
	}{
		{Environment{Paths: []string{dir}}, "a key is required"},
		{Environment{Key: "k"}, "a key is required"},
		{Environment{Key: "k", Paths: []string{"relative"}}, "not a clean absolute path"},
		{Environment{Key: "k", Paths: []string{dir + "/../env-ok"}}, "not a clean absolute path"},
		{Environment{Key: "k", Paths: []string{dir, filepath.Join(t.TempDir(), "env-ok")}}, "two directories named"},
		{Environment{Key: "k", Paths: []string{"/tmp/.hidden"}}, "no safe path segment"},
		{Environment{Key: "k", Preload: []string{"os; import sys"}}, "not a Python identifier"},
		{Environment{Key: "k", Preload: []string{"a..b"}}, "preload"},
		{Environment{Key: "bad\nkey", Preload: []string{"json"}}, "printable"},
		{Environment{Key: "k", Paths: []string{filepath.Join(t.TempDir(), "missing")}}, "environment directory"},
	} {
		res := run(t, r, trivialCode, nil, withEnvironment(c.env))
		requireFailed(t, res, runerror.Sandbox)
		assert.Contains(t, res.Error.Message, c.want, "%+v", c.env)
	}
}

const preloadProbe = `
import os
PID = os.getpid()
COUNT = [0]
`

// A template imports its environment's preloaded modules once: runs start
// with them imported (by another process, the template) and get a fresh
// copy each, so what one run changes in them no other run sees. A run of
// another environment does not have them.
func TestEnvironmentPreload(t *testing.T) {
	dir := envDir(t, "env-preload", map[string]string{"preloadprobe.py": preloadProbe})
	env := Environment{Key: "preload", Paths: []string{dir}, Preload: []string{"preloadprobe", "json"}}
	r := ownRunner(t, func(c *Config) { c.Template = TemplateOn })
	code := `
import os, sys
def main(args):
    loaded = "preloadprobe" in sys.modules
    import preloadprobe
    preloadprobe.COUNT[0] += 1
    return {"loaded": loaded, "template": preloadprobe.PID != os.getpid(), "count": preloadprobe.COUNT[0]}
`
	for range 2 {
		out := output(t, run(t, r, code, nil, withEnvironment(env)))
		assert.Equal(t, map[string]any{"loaded": true, "template": true, "count": 1.0}, out)
	}
	other := Environment{Key: "other", Paths: []string{dir}}
	out := output(t, run(t, r, code, nil, withEnvironment(other)))
	assert.Equal(t, false, out["loaded"])
	assert.Equal(t, false, out["template"])
	assert.Equal(t, 3, r.Templates().Count, "the warm pool's template and one per environment in use")
	assertHealthyAndClean(t, r)
}

// A preload that cannot be imported, or that leaves threads running (a
// fork would not carry them), fails the runs of that environment with the
// reason; other runs go on.
func TestEnvironmentPreloadFailures(t *testing.T) {
	dir := envDir(t, "env-bad", map[string]string{
		"broken.py":   "raise RuntimeError('broken at import')\n",
		"threaded.py": "import threading, time\nthreading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n",
	})
	r := ownRunner(t, func(c *Config) { c.Template = TemplateOn })
	for _, c := range []struct{ preload, want string }{
		{"nosuchmodule", "preload nosuchmodule: ModuleNotFoundError"},
		{"broken", "preload broken: RuntimeError: broken at import"},
		{"threaded", "left 2 threads running"},
	} {
		env := Environment{Key: "bad-" + c.preload, Paths: []string{dir}, Preload: []string{c.preload}}
		res := run(t, r, trivialCode, nil, withEnvironment(env))
		requireFailed(t, res, runerror.Sandbox)
		assert.Contains(t, res.Error.Message, c.want)
		assert.Contains(t, res.Error.Message, "environment bad-"+c.preload)
	}
	requireCompleted(t, run(t, r, trivialCode, nil))
	assertHealthyAndClean(t, r)
}

// At most MaxTemplates templates run: the least recently used idle one
// is stopped for a new one, never the warm pool's, and every run
// completes.
func TestTemplatesAreBounded(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.Template = TemplateOn; c.MaxTemplates = 2 })
	envs := make([]Environment, 3)
	for i := range envs {
		name := "env-" + string(rune('a'+i))
		envs[i] = Environment{Key: name, Paths: []string{envDir(t, name, map[string]string{"which.py": "NAME = '" + name + "'\n"})}}
	}
	code := "import which\ndef main(args):\n    return {'name': which.NAME}\n"
	for round := range 2 {
		for _, env := range envs {
			out := output(t, run(t, r, code, nil, withEnvironment(env)))
			assert.Equal(t, env.Key, out["name"], "round %d", round)
			assert.LessOrEqual(t, r.Templates().Count, 2)
		}
	}
	requireCompleted(t, run(t, r, trivialCode, nil))
	r.tmu.Lock()
	_, warm := r.templates[""]
	r.tmu.Unlock()
	assert.True(t, warm, "the warm pool's template stays")
	assertHealthyAndClean(t, r)
}

// The warm pool follows the base environment once it is set: its
// sandboxes are made for it, and runs of the environment take them.
func TestWarmPoolFollowsTheBaseEnvironment(t *testing.T) {
	dir := envDir(t, "env-base", map[string]string{"base.py": "VALUE = 'base'\n"})
	env := Environment{Key: "base", Paths: []string{dir}, Preload: []string{"base"}}
	r := ownRunner(t, func(c *Config) { c.WarmPool = 1 })
	require.NoError(t, r.SetWarmEnvironment(env))
	assert.Equal(t, env.Key, r.WarmEnvironment().Key)
	code := "import sys\ndef main(args):\n    loaded = 'base' in sys.modules\n    import base\n    return {'v': base.VALUE, 'preloaded': loaded}\n"
	out := output(t, run(t, r, code, nil, withEnvironment(env)))
	assert.Equal(t, "base", out["v"])
	assert.Equal(t, r.UsesTemplate(), out["preloaded"])
	waitIdle(t, r)
	requireCompleted(t, run(t, r, trivialCode, nil))
	require.Error(t, r.SetWarmEnvironment(Environment{Key: "k", Paths: []string{"relative"}}))
	assertHealthyAndClean(t, r)
}
