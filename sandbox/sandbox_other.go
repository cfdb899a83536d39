//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

// Runner is unavailable off Linux: New always fails.
type Runner struct{}

func unsupported() error {
	return fmt.Errorf("%w: the sandbox needs Linux (this is %s)", ErrUnsupported, runtime.GOOS)
}

// New fails: isolation needs Linux namespaces, cgroups and seccomp.
func New(cfg Config) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, unsupported()
}

// CheckIsolation fails off Linux.
func CheckIsolation(cfg Config) error { return unsupported() }

// Run never runs anything off Linux.
func (r *Runner) Run(ctx context.Context, job Job) (*Result, error) { return nil, ErrClosed }

// Enforcement is empty off Linux.
func (r *Runner) Enforcement() Enforcement { return Enforcement{} }

// Stats is always empty off Linux.
func (r *Runner) Stats() Stats { return Stats{} }

// Close does nothing off Linux.
func (r *Runner) Close() error { return nil }

// UsesTemplate is false off Linux.
func (r *Runner) UsesTemplate() bool { return false }

// TemplateRestarts is 0 off Linux.
func (r *Runner) TemplateRestarts() int { return 0 }

// WarmSandboxBytes is 0 off Linux.
func (r *Runner) WarmSandboxBytes() int64 { return 0 }

// Templates is empty off Linux.
func (r *Runner) Templates() TemplateStats { return TemplateStats{} }

// WarmEnvironment is empty off Linux.
func (r *Runner) WarmEnvironment() Environment { return Environment{} }

// SetWarmEnvironment fails off Linux.
func (r *Runner) SetWarmEnvironment(env Environment) error { return unsupported() }

func runInit() {}
