package sandbox

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanTimeoutsAndCPU(t *testing.T) {
	cfg := DefaultConfig().withDefaults()
	cfg.MaxTimeout = time.Minute
	for _, tc := range []struct {
		timeout, cpu, want time.Duration
		wantCPU            int64
	}{
		{0, 0, cfg.DefaultTimeout, 30},
		{1500 * time.Millisecond, 0, 1500 * time.Millisecond, 2},
		{time.Hour, 0, time.Minute, 60},
		{10 * time.Second, time.Second, 10 * time.Second, 1},
	} {
		c := cfg
		c.CPUTime = tc.cpu
		p, err := newPlan(c, Job{Code: "x", Timeout: tc.timeout})
		require.NoError(t, err)
		assert.Equal(t, tc.want, p.timeout)
		assert.Equal(t, tc.wantCPU, p.msg.CPUSeconds)
	}
}

func TestPlanMessage(t *testing.T) {
	cfg := DefaultConfig()
	job := Job{
		RunID: "run-1", EntrySkill: "acme.math.add", EntryModule: "code/main.py", Entrypoint: "main",
		Skills: []Skill{
			{Name: "acme.math.add", Entrypoint: "code/main.py", Export: "main",
				Files: []File{{Path: "code/main.py"}, {Path: "skill.toml"}}},
			{Name: "acme.util", Entrypoint: "lib/x.py", Export: "go", Files: []File{{Path: "lib/x.py"}}},
			{Name: "acme.docs", Files: []File{{Path: "SKILL.md"}}},
		},
		InputBlobs:    []InputBlob{{ID: "blob:in", Kind: "text/csv"}},
		OutputBlobIDs: []string{"blob:o1"},
		Env:           map[string]string{"K": "v"},
	}
	p, err := newPlan(cfg, job)
	require.NoError(t, err)
	data, err := json.Marshal(p.msg)
	require.NoError(t, err)
	assert.JSONEq(t, `{
		"run_id": "run-1", "skill": "acme.math.add", "module": "code.main", "entrypoint": "main", "args": {},
		"skills": [
			{"name": "acme.math.add", "root": "/job/skills/acme.math.add", "entry": "code.main", "export": "main"},
			{"name": "acme.util", "root": "/job/skills/acme.util", "entry": "lib.x", "export": "go"},
			{"name": "acme.docs", "root": "/job/skills/acme.docs"}
		],
		"inputs": [{"id": "blob:in", "path": "/blobs/in"}],
		"outputs": ["blob:o1"], "env": {"K": "v"}, "cpu_seconds": 30, "max_blob_bytes": 16777216
	}`, string(data))
}

func TestPlanRejects(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxOutputBlobs = 2
	for name, job := range map[string]Job{
		"code and skill":       {Code: "x", EntrySkill: "a.b", EntryModule: "m.py", Skills: []Skill{{Name: "a.b", Files: []File{{Path: "m.py"}}}}},
		"module without skill": {Code: "x", EntryModule: "m.py"},
		"too many outputs":     {OutputBlobIDs: []string{"a", "b", "c"}},
		"bad run id":           {RunID: "a\nb"},
		"bad export":           {Skills: []Skill{{Name: "a.b", Entrypoint: "m.py", Export: "not valid"}}},
		"bad entrypoint path":  {Skills: []Skill{{Name: "a.b", Entrypoint: "../m.py", Export: "main"}}},
		"bad input kind":       {InputBlobs: []InputBlob{{ID: "a", Kind: "nope"}}},
	} {
		_, err := newPlan(cfg, job)
		assert.ErrorIs(t, err, errInvalidJob, name)
	}
}

// TestSkillTomlAloneExportsNothing: the sandbox takes a skill's exports
// from Skill.Entrypoint/Export only; a skill.toml among the files is not
// read (the registry read it, and dispatch passes what it found).
func TestSkillTomlAloneExportsNothing(t *testing.T) {
	s := Skill{Name: "a.b", Files: []File{{Path: "code/main.py"}, {Path: "skill.toml", Data: []byte(
		"name = \"a.b\"\n[runtime]\nentrypoint = \"code/main.py\"\nexport = \"main\"\n")}}}
	msg, err := skillExports(s)
	require.NoError(t, err)
	assert.Empty(t, msg.Entry+msg.Export)
	s.Entrypoint = "code/main.py"
	msg, err = skillExports(s)
	require.NoError(t, err)
	assert.Empty(t, msg.Entry+msg.Export, "an entrypoint without an export exports nothing")
	s.Export = "main"
	msg, err = skillExports(s)
	require.NoError(t, err)
	assert.Equal(t, "code.main", msg.Entry)
	assert.Equal(t, "main", msg.Export)
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	require.NoError(t, Config{}.Validate(), "zero fields mean defaults")
	for name, edit := range map[string]func(*Config){
		"relative python":  func(c *Config) { c.Python = "python3" },
		"relative workdir": func(c *Config) { c.WorkDir = "tmp" },
		"negative workers": func(c *Config) { c.Workers = -1 },
		"negative pool":    func(c *Config) { c.WarmPool = -1 },
		"default > max":    func(c *Config) { c.DefaultTimeout, c.MaxTimeout = time.Hour, time.Minute },
		"tiny memory":      func(c *Config) { c.MemoryBytes = 1 << 20 },
		"tiny pids":        func(c *Config) { c.Pids = 2 },
		"tiny logs cap":    func(c *Config) { c.LogsHardCap = 10 },
		"tiny tmp":         func(c *Config) { c.TmpBytes = 1000 },
		"uid overflow":     func(c *Config) { c.UIDBase = 1<<32 - 10 },
	} {
		c := DefaultConfig()
		edit(&c)
		assert.ErrorIs(t, c.Validate(), errInvalidConfig, name)
	}
	d := Config{}.withDefaults()
	assert.Equal(t, 4*d.Workers, d.QueueSize)
	assert.Zero(t, d.WarmPool, "0 turns the pool off")
}

func TestPlanCPUs(t *testing.T) {
	for _, tc := range []struct{ gateway, job, want float64 }{
		{0, 0, 0}, {2, 0, 2}, {0, 0.5, 0.5}, {2, 0.5, 0.5}, {0.5, 4, 0.5},
	} {
		cfg := DefaultConfig()
		cfg.CPUs = tc.gateway
		p, err := newPlan(cfg, Job{Code: "x", CPUs: tc.job})
		require.NoError(t, err)
		assert.Equal(t, tc.want, p.cpus, "gateway %v, job %v", tc.gateway, tc.job)
	}
	for _, bad := range []float64{-1, 0.001, MaxCPUs + 1, math.NaN(), math.Inf(1)} {
		_, err := newPlan(DefaultConfig(), Job{Code: "x", CPUs: bad})
		assert.ErrorContains(t, err, "cpus must be", "%v", bad)
		cfg := DefaultConfig()
		cfg.CPUs = bad
		assert.ErrorContains(t, cfg.Validate(), "CPUs", "%v", bad)
	}
	cfg := DefaultConfig()
	cfg.CPUs = 1.5
	assert.NoError(t, cfg.Validate())
}
