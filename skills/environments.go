package skills

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pyenv"
)

// StatusBuilding: the package is valid and its Python environment is
// being built; it is offered once the build succeeds.
const StatusBuilding PackageStatus = "building_environment"

// retainOwner is the registry's name towards the builder's Retain.
const retainOwner = "skills"

// envState is where a loaded snapshot's environment stands.
type envState int

const (
	envReady    envState = iota // built, or no requirements
	envBuilding                 // a build is running
	envFailed                   // the last build failed (see Registry.failed)
)

// settleEnvsLocked gives every loaded snapshot with requirements its
// environment key, finds the environments already built, and starts the
// builds of the others off the caller's path (inline in a check). A
// snapshot that declares requirements without a package source is
// dropped with a violation.
func (r *Registry) settleEnvsLocked(rep *LoadReport) {
	b := r.opts.Environments
	keep := r.loaded[:0]
	var keys []string
	for _, s := range r.loaded {
		if len(s.requirements) == 0 {
			keep = append(keep, s)
			continue
		}
		if b == nil || !b.HasSources() {
			if pr := packageReport(rep, s.Dir); pr != nil {
				pr.Status = StatusSkipped
				pr.Violations = append(pr.Violations, noSourcesViolation(s))
			}
			continue
		}
		if s.envKey == "" {
			s.envKey = b.Key(s.requirements) // not yet published: no reader
		}
		keep = append(keep, s)
		keys = append(keys, s.envKey)
		if _, ok := r.envs[s.envKey]; ok {
			continue
		}
		if _, failed := r.failed[s.envKey]; failed {
			continue // another skill of this load has the same requirements
		}
		if env, ok := b.Lookup(s.envKey); ok {
			r.envs[s.envKey] = env
			continue
		}
		r.buildLocked(s.envKey, s.requirements)
	}
	r.loaded = keep
	if b != nil && !r.checkOnly {
		b.Retain(retainOwner, keys)
	}
}

// buildLocked builds the environment of key: inline for a check, else on
// a goroutine that publishes a new catalog when it ends.
func (r *Registry) buildLocked(key string, reqs []pyenv.Requirement) {
	if r.checkOnly {
		env, err := r.opts.Environments.Build(r.ctx, reqs)
		r.settleBuildLocked(key, env, err)
		return
	}
	if r.building[key] {
		return
	}
	r.building[key] = true
	r.builds.Add(1)
	go func() {
		defer r.builds.Done()
		env, err := r.opts.Environments.Build(r.ctx, reqs)
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.building, key)
		if r.closed || errors.Is(err, context.Canceled) || errors.Is(err, pyenv.ErrClosed) {
			return
		}
		r.settleBuildLocked(key, env, err)
		r.publishLocked()
		r.logBuilt(key)
		if r.opts.OnChange != nil {
			r.opts.OnChange(r.cur.Load(), r.reportLocked())
		}
	}()
}

func (r *Registry) settleBuildLocked(key string, env *pyenv.Env, err error) {
	if err != nil {
		r.failed[key] = err
		return
	}
	r.envs[key] = env
}

// envStateLocked says where s's environment stands.
func (r *Registry) envStateLocked(s *Skill) envState {
	switch {
	case s.envKey == "":
		return envReady
	case r.envs[s.envKey] != nil:
		return envReady
	case r.failed[s.envKey] != nil:
		return envFailed
	}
	return envBuilding
}

// publishLocked swaps in the catalog of the built-in skills and the
// loaded snapshots whose environments are ready; the others are known as
// building (Resolve says so) or left out (failed).
func (r *Registry) publishLocked() *Catalog {
	served := slices.Clone(r.builtins)
	envs := map[string]*pyenv.Env{}
	building := map[string][]string{}
	for _, s := range r.loaded {
		switch r.envStateLocked(s) {
		case envReady:
			served = append(served, s)
			if s.envKey != "" {
				envs[s.envKey] = r.envs[s.envKey]
			}
		case envBuilding:
			building[s.Manifest.Name] = append(building[s.Manifest.Name], s.Manifest.Version)
		}
	}
	cat := newCatalog(served)
	cat.envs, cat.building = envs, building
	r.cur.Store(cat)
	return cat
}

// reportLocked is the last load's report with each package's environment
// state: building, or skipped with pip's reason.
func (r *Registry) reportLocked() LoadReport {
	rep := LoadReport{Packages: slices.Clone(r.report.Packages), Skills: r.cur.Load().Len()}
	for _, s := range r.loaded {
		pr := packageReport(&rep, s.Dir)
		if pr == nil {
			continue
		}
		switch r.envStateLocked(s) {
		case envBuilding:
			pr.Status = StatusBuilding
		case envFailed:
			pr.Status = StatusSkipped
			pr.Violations = append(slices.Clone(pr.Violations), buildViolation(s, r.failed[s.envKey]))
		}
	}
	return rep
}

// logBuilt logs the packages whose environment key just settled.
func (r *Registry) logBuilt(key string) {
	for _, s := range r.loaded {
		if s.envKey != key {
			continue
		}
		ev := r.log.Info()
		msg := "skill environment built; skill offered"
		if err := r.failed[key]; err != nil {
			ev, msg = r.log.Warn(), "skill environment build failed; skill skipped"
			ev = ev.Array("violations", Violations{buildViolation(s, err)})
		}
		ev.Str("path", s.Dir).Str("name", s.Manifest.Name).Str("version", s.Manifest.Version).
			Str("environment", key).Msg(msg)
	}
}

func packageReport(rep *LoadReport, dir string) *PackageReport {
	for i := range rep.Packages {
		if rep.Packages[i].Dir == dir {
			return &rep.Packages[i]
		}
	}
	return nil
}

const requirementsExpected = "requirements pip can install from the gateway's package sources, as wheels"

func requirementStrings(s *Skill) []string {
	out := make([]string, len(s.requirements))
	for i, r := range s.requirements {
		out[i] = r.String()
	}
	return out
}

func noSourcesViolation(s *Skill) Violation {
	return Violation{File: manifestFile, Field: "/runtime/requirements", Expected: requirementsExpected,
		Actual: requirementStrings(s),
		Message: "the skill declares Python requirements but the gateway has no package source: " +
			"start it with --python-find-links DIR|URL (a wheelhouse) or --python-index-url URL"}
}

func buildViolation(s *Skill, err error) Violation {
	reason := err.Error()
	var be *pyenv.BuildError
	if errors.As(err, &be) {
		reason = be.Reason
	}
	return Violation{File: manifestFile, Field: "/runtime/requirements", Expected: requirementsExpected,
		Actual: requirementStrings(s), Message: "its Python environment could not be built: " + reason}
}

// BuildingError is what Resolve returns for a skill that is valid but not
// offered yet because its Python environment is being built;
// errors.Is(err, ErrEnvironmentBuilding).
type BuildingError struct {
	Name, Version string
}

func (e *BuildingError) Error() string {
	v := e.Version
	if v == "" || v == "latest" {
		return fmt.Sprintf("skill %q is not offered yet: its Python environment is being built", e.Name)
	}
	return fmt.Sprintf("skill %q version %q is not offered yet: its Python environment is being built", e.Name, v)
}

// Is makes errors.Is(err, ErrEnvironmentBuilding) true.
func (e *BuildingError) Is(target error) bool { return target == ErrEnvironmentBuilding }

// Environment returns the built environment of s (a skill of this
// catalog); nil when s declares no requirements.
func (c *Catalog) Environment(s *Skill) *pyenv.Env {
	if s == nil || s.envKey == "" {
		return nil
	}
	return c.envs[s.envKey]
}

// Building lists the skills ("name@version") whose environments were
// being built when the catalog was made, sorted.
func (c *Catalog) Building() []string {
	var out []string
	for n, vs := range c.building {
		for _, v := range vs {
			out = append(out, n+"@"+v)
		}
	}
	slices.SortFunc(out, strings.Compare)
	return out
}

// buildingError returns a *BuildingError when name (at version, or any
// version) is waiting for its environment.
func (c *Catalog) buildingError(name, version string) error {
	vs := c.building[name]
	if len(vs) == 0 {
		return nil
	}
	if version == "" || version == "latest" || slices.Contains(vs, version) {
		return &BuildingError{Name: name, Version: version}
	}
	return nil
}
