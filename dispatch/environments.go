package dispatch

import (
	"context"
	"fmt"
	"slices"

	"github.com/skillgate/skillgate/pyenv"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/skills"
	"github.com/skillgate/skillgate/transport"
)

// Retry hint of ENVIRONMENT_BUILDING: a build takes seconds to minutes.
const (
	buildingRetryMS       = 2000
	buildingRetryAttempts = 30
)

// environmentBuilding answers a skill that is valid but waits for its
// Python environment: not a missing skill, a retryable state.
func environmentBuilding(err error) *transport.Error {
	return transport.AppError(StringEnvironmentBuilding,
		"The skill's Python environment is being built; it is offered once ready.").
		WithDetails(err.Error()).WithRetry(buildingRetryMS, buildingRetryAttempts)
}

// baseBuilding answers a run asked for before the base environment (the
// one every run gets) is built.
func baseBuilding(error) *transport.Error {
	return transport.AppError(StringEnvironmentBuilding,
		"The base Python environment every run gets is being built; runs start once it is ready.").
		WithDetails("the gateway is building its --python-requirements environment").WithRetry(buildingRetryMS, buildingRetryAttempts)
}

// baseFailed answers runs when the base environment could not be built:
// no run may start without what the operator promised every run.
func baseFailed(err error) *transport.Error {
	return transport.AppError(StringSandboxUnavailable,
		"Code execution is not available: the base Python environment could not be built.").WithDetails(err.Error())
}

// skillEnvironment is the built environment of s; nil when s declares no
// requirements. The catalog that served s knows it; a reload since may
// have dropped s from the current one, so the builder is asked too.
func (d *Dispatcher) skillEnvironment(s *skills.Skill) (*pyenv.Env, error) {
	key := s.EnvironmentKey()
	if key == "" {
		return nil, nil
	}
	if env := d.catalog().Environment(s); env != nil {
		return env, nil
	}
	if b := d.opts.Environments; b != nil {
		if env, ok := b.Lookup(key); ok {
			return env, nil
		}
	}
	return nil, &skills.BuildingError{Name: s.Manifest.Name, Version: s.Manifest.Version}
}

// Bounds of a run's environment, the sandbox's (sandbox.Environment
// validates them): at most this many environment directories, and this
// many preloaded modules.
const (
	maxRunEnvironments = 8
	maxRunPreload      = 32
)

// runEnvironment is what the run's Python sees before the host's
// packages: the environments of the mounted skills in mount order (the
// executed skill's for execute_skill), then the base environment; the
// preload lists likewise. It returns the keys of the environments, which
// the run holds while it lasts. Two mounted skills whose environments hold
// one distribution at different versions cannot share a run.
func (d *Dispatcher) runEnvironment(mounts []*skills.Skill) (sandbox.Environment, []string, error) {
	base, err := d.opts.PythonBase.Get()
	if err != nil {
		return sandbox.Environment{}, nil, err
	}
	var envs []*pyenv.Env
	var owners []*skills.Skill
	var preload []string
	for i, s := range mounts {
		env, err := d.skillEnvironment(s)
		if err != nil {
			return sandbox.Environment{}, nil, err
		}
		preload = appendNew(preload, s.Preload()...)
		if env == nil || slices.ContainsFunc(envs, func(e *pyenv.Env) bool { return e.Key == env.Key }) {
			continue
		}
		for j, other := range envs {
			if c := pyenv.Conflicts(other, env); len(c) > 0 {
				return sandbox.Environment{}, nil, conflictErr(i, owners[j], s, c)
			}
		}
		if len(envs) == maxRunEnvironments-1 {
			return sandbox.Environment{}, nil, paramErr(fmt.Sprintf("mount_skills[%d]", i), fmt.Sprintf(
				"mounts more than %d skills with Python environments of their own; mount fewer in one run", maxRunEnvironments-1))
		}
		envs, owners = append(envs, env), append(owners, s)
	}
	out, keys := composeEnvironment(envs, preload, base, d.opts.PythonBase.Preload())
	return out, keys, nil
}

// composeEnvironment lays skills' environments and preload, then the
// base's, into the sandbox's Environment, keyed by what it holds.
// Preloading is a speed-up: modules past the sandbox's bound are imported
// by the run itself, as without preload.
func composeEnvironment(envs []*pyenv.Env, preload []string, base *pyenv.Env, basePreload []string) (sandbox.Environment, []string) {
	if base != nil && !slices.ContainsFunc(envs, func(e *pyenv.Env) bool { return e.Key == base.Key }) {
		envs = append(envs, base)
	}
	preload = appendNew(slices.Clone(preload), basePreload...)
	if len(preload) > maxRunPreload {
		preload = preload[:maxRunPreload]
	}
	var out sandbox.Environment
	keys := make([]string, len(envs))
	for i, e := range envs {
		out.Paths, keys[i] = append(out.Paths, e.Dir), e.Key
	}
	if len(preload) > 0 {
		out.Preload = preload
	}
	out.Key = pyenv.RunKey(out.Paths, out.Preload)
	return out, keys
}

// BaseEnvironment is the sandbox Environment of a run that mounts no skill
// with an environment of its own: the base environment and its preload
// (the zero Environment when there is neither). It waits for the base
// environment's build; the warm pool is made for it
// (sandbox.Runner.SetWarmEnvironment).
func BaseEnvironment(ctx context.Context, base *pyenv.Base) (sandbox.Environment, error) {
	env, err := base.Wait(ctx)
	if err != nil {
		return sandbox.Environment{}, err
	}
	out, _ := composeEnvironment(nil, nil, env, base.Preload())
	return out, nil
}

func conflictErr(i int, a, b *skills.Skill, cs []pyenv.Conflict) error {
	c := cs[0]
	more := ""
	if len(cs) > 1 {
		more = fmt.Sprintf(" (and %d more distributions)", len(cs)-1)
	}
	return paramErr(fmt.Sprintf("mount_skills[%d]", i), fmt.Sprintf(
		"mounts %s, whose Python environment has %s %s, with %s, whose environment has %s %s%s: "+
			"a run imports one version of a package; mount them in separate runs",
		quoteName(b.Manifest.Name), c.Name, c.Versions[1], quoteName(a.Manifest.Name), c.Name, c.Versions[0], more))
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}

// EnvironmentDescription is describe_skill's view of a skill's Python
// environment: what it declares and what was actually installed.
type EnvironmentDescription struct {
	// Requirements are the declared requirements, canonical
	// (skill.toml's and requirements.txt's).
	Requirements []string `json:"requirements"`
	// Preload are the modules its runs' template imports.
	Preload []string `json:"preload,omitempty"`
	// Installed lists every distribution of the environment, dependencies
	// included, as their .dist-info say.
	Installed []pyenv.Dist `json:"installed"`
}

func (d *Dispatcher) describeEnvironment(s *skills.Skill) *EnvironmentDescription {
	reqs, preload := s.Requirements(), s.Preload()
	if len(reqs) == 0 && len(preload) == 0 {
		return nil
	}
	out := &EnvironmentDescription{Requirements: make([]string, len(reqs)), Preload: preload, Installed: []pyenv.Dist{}}
	for i, r := range reqs {
		out.Requirements[i] = r.String()
	}
	if env, err := d.skillEnvironment(s); err == nil && env != nil {
		out.Installed = env.Installed
	}
	return out
}
