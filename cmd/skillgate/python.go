package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/pyenv"
	"github.com/skillgate/skillgate/sandbox"
)

// pythonEnvs are the gateway's Python environments: the builder (nil
// without a package source) and the base environment every run gets.
type pythonEnvs struct {
	builder *pyenv.Builder
	base    *pyenv.Base
}

func (p pythonEnvs) close() {
	if p.builder != nil {
		_ = p.builder.Close()
	}
}

// registerPythonFlags defines the flags of the Python environments.
func registerPythonFlags(fs *pflag.FlagSet, c *serveConfig) {
	fs.StringVar(&c.PythonRequirements, "python-requirements", "", "requirements file (pip's format: requirements, comments, --hash) of the base environment every run gets: run_code, action skills, Agent Skills' scripts")
	fs.StringSliceVar(&c.PythonFindLinks, "python-find-links", nil, "wheelhouse folder or URL that environments install from (repeatable; pip --find-links); wheels only")
	fs.StringVar(&c.PythonIndexURL, "python-index-url", "", "package index that environments install from (pip --index-url); without it pip uses --no-index")
	fs.StringSliceVar(&c.PythonPreload, "python-preload", nil, "modules (comma-separated) every run's template imports ahead of the runs, e.g. pandas")
}

// pythonSources is the builder configuration of the source flags.
func (c *serveConfig) pythonSources() pyenv.Config {
	return pyenv.Config{Python: c.Python, FindLinks: slices.Clone(c.PythonFindLinks), IndexURL: c.PythonIndexURL}
}

func (c *serveConfig) hasPythonSources() bool {
	return len(c.PythonFindLinks) > 0 || c.PythonIndexURL != ""
}

// validatePython checks the Python environment flags.
func (c *serveConfig) validatePython() []error {
	var errs []error
	if err := c.pythonSources().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--python-find-links/--python-index-url: %w", err))
	}
	for _, m := range c.PythonPreload {
		if !pyenv.ValidModuleName(m) {
			errs = append(errs, fmt.Errorf("--python-preload: %q is not a Python module name", m))
		}
	}
	if c.PythonRequirements != "" && !c.hasPythonSources() {
		errs = append(errs, errors.New("--python-requirements needs a package source: --python-find-links DIR|URL or --python-index-url URL"))
	}
	return errs
}

// baseRequirements reads --python-requirements.
func (c *serveConfig) baseRequirements() ([]pyenv.Requirement, error) {
	if c.PythonRequirements == "" {
		return nil, nil
	}
	data, err := os.ReadFile(c.PythonRequirements)
	if err != nil {
		return nil, fmt.Errorf("--python-requirements: %w", err)
	}
	reqs, err := pyenv.ParseRequirementsFile(data)
	if err != nil {
		return nil, fmt.Errorf("--python-requirements %s: %w", c.PythonRequirements, err)
	}
	return reqs, nil
}

// openPython opens the environments under --data-dir/envs (a temporary
// folder without --data-dir) and starts building the base environment in
// the background: serving starts at once, runs wait for it (they answer
// ENVIRONMENT_BUILDING meanwhile).
func openPython(ctx context.Context, cfg *serveConfig, log zerolog.Logger, m *metrics.Metrics) (pythonEnvs, error) {
	reqs, err := cfg.baseRequirements()
	if err != nil {
		return pythonEnvs{}, err
	}
	if !cfg.hasPythonSources() {
		return pythonEnvs{base: pyenv.StartBase(ctx, nil, nil, cfg.PythonPreload)}, nil
	}
	pc := cfg.pythonSources()
	if cfg.DataDir != "" {
		pc.Dir = filepath.Join(cfg.DataDir, "envs")
	}
	pc.Logger = log.With().Str("component", "pyenv").Logger()
	pc.Metrics = m
	b, err := pyenv.New(pc)
	if err != nil {
		return pythonEnvs{}, err
	}
	if pc.Dir == "" {
		log.Warn().Str("dir", b.Dir()).Msg("python environments are kept in a temporary folder and built again after a restart; set --data-dir to keep them")
	}
	base := pyenv.StartBase(ctx, b, reqs, cfg.PythonPreload)
	if len(reqs) > 0 {
		go func() {
			env, err := base.Wait(ctx)
			switch {
			case err != nil && ctx.Err() == nil:
				log.Error().Err(err).Str("file", cfg.PythonRequirements).Msg("the base python environment could not be built; runs are refused")
			case env != nil:
				log.Info().Str("environment", env.Key).Int("distributions", len(env.Installed)).Msg("base python environment ready")
			}
		}()
	}
	return pythonEnvs{builder: b, base: base}, nil
}

// warmBase makes the warm pool follow the base environment once it is
// built, so that the runs that get only the base environment (run_code
// without skills, skills without requirements) take warm sandboxes.
func warmBase(ctx context.Context, runner *sandbox.Runner, base *pyenv.Base, log zerolog.Logger) {
	if runner == nil || base == nil {
		return
	}
	go func() {
		env, err := dispatch.BaseEnvironment(ctx, base)
		if err != nil || env.Key == "" {
			return // no base, or it failed: logged by openPython
		}
		if err := runner.SetWarmEnvironment(env); err != nil && ctx.Err() == nil {
			log.Warn().Err(err).Msg("the warm sandboxes cannot follow the base python environment")
		}
	}()
}

// baseState is the /readyz line of the base environment: building, ready
// or failed with pip's reason. Runs answer ENVIRONMENT_BUILDING or
// SANDBOX_UNAVAILABLE accordingly; discovery is served throughout, so the
// gateway stays ready.
func baseState(base *pyenv.Base) string {
	if base.Key() == "" {
		return ""
	}
	env, err := base.Get()
	switch {
	case errors.Is(err, pyenv.ErrBuilding):
		return "python.base_environment: building\n"
	case err != nil:
		return "python.base_environment: failed: " + strings.Join(strings.Fields(err.Error()), " ") + "\n"
	}
	return fmt.Sprintf("python.base_environment: ready: %s, %d distributions\n", env.Key, len(env.Installed))
}

// reportBase keeps the /readyz details current once the base environment
// settles.
func reportBase(ctx context.Context, base *pyenv.Base, details func(string)) {
	details(baseState(base))
	if base.Key() == "" {
		return
	}
	go func() {
		_, _ = base.Wait(ctx)
		if ctx.Err() == nil {
			details(baseState(base))
		}
	}()
}
