package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/pyenv"
	"github.com/skillgate/skillgate/pyenv/pyenvtest"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/skills"
	"github.com/skillgate/skillgate/transport"
)

// envSkill is an action skill requiring requirement and preloading mod.
func envSkill(t *testing.T, root, name, requirement, preload string) {
	t.Helper()
	dir := filepath.Join(root, name)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "code"), 0o755))
	toml := fmt.Sprintf("name = %q\nversion = \"1.0.0\"\ndescription = \"Test.\"\nkind = \"action\"\n[runtime]\n"+
		"language = \"python\"\nentrypoint = \"code/main.py\"\nexport = \"main\"\nrequirements = [%q]\n", name, requirement)
	if preload != "" {
		toml += fmt.Sprintf("preload = [%q]\n", preload)
	}
	for p, data := range map[string]string{
		"skill.toml": toml, "SKILL.md": "---\nname: T\nshort_description: T.\n---\nT\n",
		"code/main.py": "def main(args):\n    return {}\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644))
	}
}

// pyEnvs is a gateway whose skills and base environment install from a
// wheelhouse the test wrote.
type pyEnvs struct {
	builder *pyenv.Builder
	reg     *skills.Registry
	base    *pyenv.Base
	changed chan struct{}
}

func newPyEnvs(t *testing.T, findLinks string, baseReqs []string, basePreload []string, skillsOf func(root string)) *pyEnvs {
	t.Helper()
	if _, err := os.Stat(pyenv.DefaultPython); err != nil {
		t.Skip("no " + pyenv.DefaultPython)
	}
	if findLinks == "" {
		wh, err := pyenvtest.Wheelhouse(t.TempDir(),
			pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"}, pyenvtest.Wheel{Name: "acme-tool", Version: "2.0.0"},
			pyenvtest.Wheel{Name: "acme-other", Version: "1.0.0"}, pyenvtest.Wheel{Name: "acme-base", Version: "3.0.0"})
		require.NoError(t, err)
		findLinks = wh
	}
	b, err := pyenv.New(pyenv.Config{Dir: t.TempDir(), FindLinks: []string{findLinks}})
	require.NoError(t, err)
	p := &pyEnvs{builder: b, changed: make(chan struct{}, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	reqs, err := pyenv.ParseRequirements(baseReqs)
	require.NoError(t, err)
	p.base = pyenv.StartBase(ctx, b, reqs, basePreload)
	root := t.TempDir()
	skillsOf(root)
	p.reg, err = skills.NewRegistry(skills.Options{Dir: root, Logger: zerolog.Nop(), Environments: b,
		OnChange: func(*skills.Catalog, skills.LoadReport) { p.changed <- struct{}{} }})
	require.NoError(t, err)
	t.Cleanup(func() {
		cancel()
		_ = p.reg.Close()
		_ = b.Close()
	})
	return p
}

// settle waits until no skill is building and the base is built.
func (p *pyEnvs) settle(t *testing.T) {
	t.Helper()
	for len(p.reg.Catalog().Building()) > 0 {
		select {
		case <-p.changed:
		case <-time.After(2 * time.Minute):
			t.Fatal("environments not built")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := p.base.Wait(ctx)
	require.NoError(t, err)
}

func (p *pyEnvs) exec(t *testing.T) (*env, *fakeRunner) {
	r := &fakeRunner{result: completed(`{}`)}
	e := newEnvOpts(t, "", 256<<10, func(o *Options) {
		o.Runner, o.Skills, o.Environments, o.PythonBase = r, p.reg, p.builder, p.base
	})
	return e, r
}

func (p *pyEnvs) env(t *testing.T, name string) *pyenv.Env {
	t.Helper()
	s, err := p.reg.Catalog().Resolve(name, "")
	require.NoError(t, err)
	env := p.reg.Catalog().Environment(s)
	require.NotNil(t, env)
	return env
}

func TestRunEnvironments(t *testing.T) {
	p := newPyEnvs(t, "", []string{"acme-base==3.0.0"}, []string{"json"}, func(root string) {
		envSkill(t, root, "acme.tool.one", "acme-tool==1.0.0", "acme_tool")
		envSkill(t, root, "acme.tool.two", "acme-tool==2.0.0", "")
		envSkill(t, root, "acme.other.run", "acme-other", "acme_other")
	})
	p.settle(t)
	base, err := p.base.Get()
	require.NoError(t, err)
	one, other := p.env(t, "acme.tool.one"), p.env(t, "acme.other.run")
	e, r := p.exec(t)
	for _, c := range e.fronts() {
		_, terr := c.call("execute_skill", `{"name":"acme.tool.one"}`)
		require.Nil(t, terr)
		job := r.last()
		assert.Equal(t, []string{one.Dir, base.Dir}, job.Environment.Paths, "the skill's environment first, then the base")
		assert.Equal(t, []string{"acme_tool", "json"}, job.Environment.Preload)
		assert.Equal(t, pyenv.RunKey(job.Environment.Paths, job.Environment.Preload), job.Environment.Key)

		_, terr = c.call("run_code", `{"language":"python","code":"def main(a): pass"}`)
		require.Nil(t, terr)
		job = r.last()
		assert.Equal(t, []string{base.Dir}, job.Environment.Paths, "run_code gets the base")
		assert.Equal(t, []string{"json"}, job.Environment.Preload)

		_, terr = c.call("run_code", `{"language":"bash","code":"true","mount_skills":["acme.other.run","acme.tool.one"]}`)
		require.Nil(t, terr)
		job = r.last()
		assert.Equal(t, []string{other.Dir, one.Dir, base.Dir}, job.Environment.Paths, "mounted skills' environments in mount order")
		assert.Equal(t, []string{"acme_other", "acme_tool", "json"}, job.Environment.Preload)

		_, terr = c.call("run_code", `{"language":"python","code":"def main(a): pass","mount_skills":["acme.tool.one","acme.tool.two"]}`)
		require.NotNil(t, terr, c.name())
		assert.Equal(t, transport.CodeInvalidParams, int(terr.Code))
		assert.Equal(t, `"mount_skills[1]"`, string(terr.Extra["param"]))
		assert.Contains(t, terr.Details, `mounts "acme.tool.two", whose Python environment has acme-tool 2.0.0, with "acme.tool.one", whose environment has acme-tool 1.0.0`)
	}

	res, terr := e.fronts()[0].call("describe_skill", `{"name":"acme.tool.one"}`)
	require.Nil(t, terr)
	var desc struct {
		Skill SkillDescription `json:"skill"`
	}
	require.NoError(t, json.Unmarshal(res, &desc))
	require.NotNil(t, desc.Skill.Environment)
	assert.Equal(t, EnvironmentDescription{Requirements: []string{"acme-tool==1.0.0"}, Preload: []string{"acme_tool"},
		Installed: []pyenv.Dist{{Name: "acme-tool", Version: "1.0.0"}}}, *desc.Skill.Environment)
	assert.Equal(t, []string{"acme-tool==1.0.0"}, desc.Skill.Manifest.Runtime.Requirements)
}

func TestRunHoldsItsEnvironments(t *testing.T) {
	p := newPyEnvs(t, "", nil, nil, func(root string) {
		envSkill(t, root, "acme.tool.one", "acme-tool==1.0.0", "")
	})
	p.settle(t)
	one := p.env(t, "acme.tool.one")
	running, finish := make(chan struct{}), make(chan struct{})
	e, r := p.exec(t)
	r.result = func(job sandbox.Job) (*sandbox.Result, error) {
		close(running)
		<-finish
		return completed(`{}`)(job)
	}
	done := make(chan *transport.Error, 1)
	go func() {
		_, terr := e.fronts()[0].call("execute_skill", `{"name":"acme.tool.one"}`)
		done <- terr
	}()
	<-running
	require.NoError(t, os.RemoveAll(filepath.Join(p.reg.Dir(), "acme.tool.one")))
	_, err := p.reg.Reload()
	require.NoError(t, err)
	assert.DirExists(t, one.Dir, "the running run still has it mounted")
	close(finish)
	require.Nil(t, <-done)
	assert.NoDirExists(t, one.Dir, "removed when the run ended")
}

func TestEnvironmentBuildingIsRetryable(t *testing.T) {
	url, release := pyenvtest.GatedWheelhouse(t, pyenvtest.Wheel{Name: "acme-tool", Version: "1.0.0"})
	p := newPyEnvs(t, url, []string{"acme-tool"}, nil, func(root string) {
		envSkill(t, root, "acme.tool.one", "acme-tool==1.0.0", "")
	})
	e, r := p.exec(t)
	for _, c := range e.fronts() {
		for _, call := range [][2]string{
			{"describe_skill", `{"name":"acme.tool.one"}`},
			{"execute_skill", `{"name":"acme.tool.one"}`},
			{"run_code", `{"language":"python","code":"def main(a): pass","mount_skills":["acme.tool.one"]}`},
		} {
			_, terr := c.call(call[0], call[1])
			require.NotNil(t, terr, call[0])
			assert.Equal(t, StringEnvironmentBuilding, terr.EffectiveCode(), call[0])
			assert.Contains(t, terr.Details, `skill "acme.tool.one" is not offered yet: its Python environment is being built`)
			require.NotNil(t, terr.Retry, call[0])
			assert.Positive(t, terr.Retry.SuggestedDelayMS)
		}
		_, terr := c.call("run_code", `{"language":"python","code":"def main(a): pass"}`)
		require.NotNil(t, terr)
		assert.Equal(t, StringEnvironmentBuilding, terr.EffectiveCode())
		assert.Contains(t, terr.Message, "base Python environment")
		assert.NotNil(t, terr.Retry)
	}
	assert.Empty(t, r.jobs, "nothing ran")
	close(release)
	p.settle(t)
	_, terr := e.fronts()[0].call("execute_skill", `{"name":"acme.tool.one"}`)
	require.Nil(t, terr)
}

func TestBaseEnvironmentFailureRefusesRuns(t *testing.T) {
	p := newPyEnvs(t, "", []string{"acme-missing"}, nil, func(string) {})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := p.base.Wait(ctx)
	require.ErrorIs(t, err, pyenv.ErrBuildFailed)
	e, _ := p.exec(t)
	_, terr := e.fronts()[0].call("run_code", `{"language":"python","code":"def main(a): pass"}`)
	require.NotNil(t, terr)
	assert.Equal(t, StringSandboxUnavailable, terr.EffectiveCode())
	assert.Contains(t, terr.Details, "acme-missing")
	assert.Nil(t, terr.Retry)
}
