package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// templateRunner is ownRunner with the template on whatever the environment
// asks for the other tests.
func templateRunner(t *testing.T) *Runner {
	t.Helper()
	r := ownRunner(t, func(c *Config) { c.Template = TemplateOn })
	require.True(t, r.templateOn)
	return r
}

// templatePid is the host pid of the Runner's current template for the
// warm pool's environment.
func templatePid(t *testing.T, r *Runner) int {
	t.Helper()
	return warmTemplate(t, r).cmd.Process.Pid
}

// warmTemplate is the template of the warm pool's environment.
func warmTemplate(t *testing.T, r *Runner) *template {
	t.Helper()
	r.tmu.Lock()
	e := r.templates[r.warmEnv.Key]
	r.tmu.Unlock()
	require.NotNil(t, e)
	<-e.ready
	require.NotNil(t, e.tpl)
	return e.tpl
}

// eachTemplate runs body once with the template of the host's packages
// alone and once with an environment's template that preloads modules:
// what holds for the one holds for every environment's.
func eachTemplate(t *testing.T, body func(t *testing.T, env Environment)) {
	dir := envDir(t, "env-preloaded", map[string]string{"preloaded.py": "import os\nSTATE = {'pid': os.getpid()}\n"})
	for _, env := range []Environment{{}, {Key: "preloaded", Paths: []string{dir}, Preload: []string{"preloaded", "json", "decimal"}}} {
		t.Run("env="+env.Key, func(t *testing.T) { body(t, env) })
	}
}

// TestTemplateRunInheritsNothing checks what a run forked from a template
// could have kept of it: descriptors, environment, random state, files in
// /tmp, writable shared memory.
func TestTemplateRunInheritsNothing(t *testing.T) {
	eachTemplate(t, func(t *testing.T, env Environment) {
		r := templateRunner(t)
		code := `import os, random, sys

def main(args):
    with open('/tmp/mark', 'a') as f:
        f.write('x')
    maps = open('/proc/self/maps').read().splitlines()
    return {
        'fds': sorted(int(fd) for fd in os.listdir('/proc/self/fd')),
        'env': sorted(os.environ.keys()),
        'random': random.getrandbits(64),
        'tmp': sorted(os.listdir('/tmp')),
        'shared_writable': [m for m in maps if m.split()[1].startswith('rw') and m.split()[1][3] == 's'],
        'argv': sys.argv,
        'main': sys.modules['__main__'].__file__,
    }
`
		first := output(t, run(t, r, code, nil, withEnvironment(env)))
		second := output(t, run(t, r, code, nil, withEnvironment(env)))
		assert.Equal(t, []any{0.0, 1.0, 2.0, 3.0, 4.0, 5.0}, first["fds"])
		wantEnv := []any{"HOME", "LANG", "PATH", "PYTHONDONTWRITEBYTECODE", "TMPDIR"}
		if env.Key != "" {
			wantEnv = []any{"HOME", "LANG", "PATH", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "TMPDIR"}
		}
		assert.Equal(t, wantEnv, first["env"], "the preload's thread settings are not left behind")
		assert.NotEqual(t, first["random"], second["random"], "every run reseeds random")
		assert.Equal(t, []any{"mark"}, first["tmp"])
		assert.Equal(t, []any{"mark"}, second["tmp"], "every run gets a fresh /tmp")
		assert.Empty(t, first["shared_writable"])
		assert.Equal(t, []any{wire.BootScript}, first["argv"])
		assert.Equal(t, wire.BootScript, first["main"])
	})
}

// TestTemplateOutOfReach tries, from a run, everything that could
// touch the template: it is in no pid namespace a run sees, so there is
// nothing to signal, trace or read; a run that kills all it can leaves the
// template serving the next one.
func TestTemplateOutOfReach(t *testing.T) {
	r := templateRunner(t)
	before := templatePid(t, r)
	out := output(t, run(t, r, "import os\n\ndef main(args):\n    return {'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit())}\n", nil))
	assert.Equal(t, []any{1.0, 2.0}, out["pids"], "a run sees its pid 1 and itself, never the template")
	// kill(-1) signals every process the run may signal: only those of its
	// own pid namespace, itself included.
	res := run(t, r, "import os, signal\n\ndef main(args):\n    os.kill(-1, signal.SIGKILL)\n    return {}\n", nil)
	assert.NotEqual(t, StatusCompleted, res.Status)
	requireCompleted(t, run(t, r, trivialCode, nil))
	assert.Equal(t, before, templatePid(t, r), "the template survived")
	assert.True(t, processAlive(before))
	assert.Zero(t, r.TemplateRestarts())
}

// TestTemplateKilledRunsLeaveTemplate times a run out and cancels another:
// the template that forked them goes on.
func TestTemplateKilledRunsLeaveTemplate(t *testing.T) {
	r := templateRunner(t)
	before := templatePid(t, r)
	res := run(t, r, "import time\n\ndef main(args):\n    time.sleep(60)\n", nil, withTimeout(time.Second))
	assert.Equal(t, runerror.Timeout, res.Error.Type)
	requireCompleted(t, run(t, r, trivialCode, nil))
	assert.Equal(t, before, templatePid(t, r))
	assert.Zero(t, r.TemplateRestarts())
}

// TestTemplateCrashedIsReplaced kills the template: the next run
// gets a new one, and the restart is counted.
func TestTemplateCrashedIsReplaced(t *testing.T) {
	r := templateRunner(t)
	before := templatePid(t, r)
	require.NoError(t, syscall.Kill(before, syscall.SIGKILL))
	tpl := warmTemplate(t, r)
	select {
	case <-tpl.dead:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed template was not reaped")
	}
	requireCompleted(t, run(t, r, trivialCode, nil))
	assert.NotEqual(t, before, templatePid(t, r))
	assert.Equal(t, 1, r.TemplateRestarts())
}

// TestTemplateOffStartsFromScratch covers the path without a template: the
// self-check in New verifies its isolation from the inside.
func TestTemplateOffStartsFromScratch(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.Template = TemplateOff })
	assert.False(t, r.templateOn)
	out := output(t, run(t, r, "import os\n\ndef main(args):\n    return {'uid': os.getuid()}\n", nil))
	assert.Equal(t, 1000.0, out["uid"])
}

// TestTemplateAutoUsesTemplate: auto picks the template where it works.
func TestTemplateAutoUsesTemplate(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.Template = TemplateAuto })
	assert.True(t, r.templateOn)
}

// TestTemplateFailureFallsBack: in auto mode a template that does not work
// leaves sandboxes started from scratch; in on mode New refuses.
func TestTemplateFailureFallsBack(t *testing.T) {
	r := hookedRunner(t, testHooks{breakTemplate: true}, func(c *Config) { c.Template = TemplateAuto })
	assert.False(t, r.templateOn)
	requireCompleted(t, run(t, r, trivialCode, nil))

	cfg := testConfig()
	cfg.Template, cfg.WarmPool = TemplateOn, 0
	_, err := newHooked(cfg, testHooks{breakTemplate: true})
	require.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "sandbox template")
}

func TestParseTemplateMode(t *testing.T) {
	for in, want := range map[string]TemplateMode{"": TemplateAuto, "auto": TemplateAuto, " on ": TemplateOn, "off": TemplateOff} {
		got, err := ParseTemplateMode(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ParseTemplateMode("yes")
	require.ErrorIs(t, err, errInvalidConfig)
	assert.ErrorContains(t, Config{Template: "fast"}.Validate(), "want auto, on or off")
	assert.ErrorContains(t, Config{WarmMemoryBytes: -1}.Validate(), "WarmMemoryBytes is negative")
}

// TestWarmMemoryBoundsPool: a budget smaller than one warm sandbox leaves
// no pool; the size of one is measured either way.
func TestWarmMemoryBoundsPool(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.WarmPool, c.WarmMemoryBytes = 4, 1<<20 })
	assert.Positive(t, r.WarmSandboxBytes())
	assert.Less(t, r.poolSize.Load(), int64(4))
	requireCompleted(t, run(t, r, trivialCode, nil))
}

func processAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command in parentheses; Z is a zombie.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// namespacesCode reports the run's namespaces as the kernel names them
// and the CLOCK_MONOTONIC span in which it held them: a namespace's
// number is reused once it is gone, so only runs alive at the same time
// can be told apart by it.
const namespacesCode = `import os, time

def main(args):
    since = time.monotonic_ns()
    names = {n: os.readlink('/proc/self/ns/' + n) for n in ('net', 'mnt', 'pid', 'ipc', 'uts', 'cgroup')}
    time.sleep(1)
    return {"ns": names, "alive": [since, time.monotonic_ns()]}
`

// TestTemplateNamespacesAreFresh: runs from the template have namespaces of
// their own, none the template's or the host's, and none of another run
// alive at the same time. (The network namespace is made ahead of the
// start that enters it: each is entered once.)
func TestTemplateNamespacesAreFresh(t *testing.T) {
	eachTemplate(t, func(t *testing.T, env Environment) {
		const runs = 4
		r := ownRunner(t, func(c *Config) { c.Template, c.Workers, c.WarmPool, c.Environment = TemplateOn, runs, runs, env })
		// The template enters each network namespace it makes for a moment:
		// its own is the one it is in once the pool is full and no start is
		// under way.
		require.Eventually(t, func() bool { s := r.Stats(); return s.WarmReady == runs && s.Starting == 0 }, 30*time.Second, 5*time.Millisecond)
		outside := map[string]string{}
		for who, pid := range map[string]int{"the host": os.Getpid(), "the template": templatePid(t, r)} {
			for _, n := range []string{"net", "mnt", "pid", "ipc", "uts", "cgroup"} {
				link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, n))
				require.NoError(t, err)
				outside[link] = who
			}
		}
		results := make([]*Result, runs)
		errs := make([]error, runs)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() {
				results[i], errs[i] = r.Run(context.Background(), Job{RunID: t.Name(), Code: namespacesCode, Environment: env})
			})
		}
		wg.Wait()
		type seen struct {
			ns          map[string]any
			since, till float64
		}
		all := make([]seen, runs)
		for i, res := range results {
			require.NoError(t, errs[i])
			out := output(t, res)
			alive := out["alive"].([]any)
			all[i] = seen{out["ns"].(map[string]any), alive[0].(float64), alive[1].(float64)}
			require.Len(t, all[i].ns, 6)
			for n, link := range all[i].ns {
				owner, dup := outside[link.(string)]
				assert.False(t, dup, "run %d's %s namespace %s is also %s's", i, n, link, owner)
			}
		}
		together := 0
		for i := range all {
			for j := range i {
				if all[i].since > all[j].till || all[j].since > all[i].till {
					continue // one was gone before the other began
				}
				together++
				for n, link := range all[i].ns {
					assert.NotEqual(t, link, all[j].ns[n], "runs %d and %d share their %s namespace", i, j, n)
				}
			}
		}
		assert.Positive(t, together, "no two runs were alive at the same time")
	})
}

// TestTemplateSetupFailureIsReported: a job process that cannot build its
// sandbox's root (here: its job directory is missing) says why, and the
// start fails with that reason, not with the result pipe's end.
func TestTemplateSetupFailureIsReported(t *testing.T) {
	cfg := testConfig()
	cfg.Template, cfg.WarmPool = TemplateOn, 0
	r, err := newHooked(cfg, testHooks{breakJobDir: true})
	if err == nil {
		_ = r.Close()
	}
	require.Error(t, err)
	assert.ErrorContains(t, err, "sandbox did not start: [mount /opt/.run/job: No such file or directory]")
}
