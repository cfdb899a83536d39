package pyenv

import (
	"context"
	"slices"
	"sync"
)

// baseOwner is the base environment's name towards Retain.
const baseOwner = "base"

// Base is the base environment every run sees (after a skill's own): the
// operator's requirements file, built in the background at start-up, and
// the modules preloaded for every run. Safe for concurrent use.
type Base struct {
	preload []string
	key     string
	done    chan struct{} // closed when the build ended; nil: nothing to build

	mu  sync.Mutex // guards env and err
	env *Env
	err error
}

// StartBase starts building the base environment of reqs with b (nil
// when reqs is empty) and retains it. The build runs on its own
// goroutine; Get tells where it stands. ctx ends the build.
func StartBase(ctx context.Context, b *Builder, reqs []Requirement, preload []string) *Base {
	base := &Base{preload: slices.Clone(preload)}
	if len(reqs) == 0 || b == nil {
		return base
	}
	base.key = b.Key(reqs)
	b.Retain(baseOwner, []string{base.key})
	base.done = make(chan struct{})
	go func() {
		defer close(base.done)
		env, err := b.Build(ctx, reqs)
		base.mu.Lock()
		base.env, base.err = env, err
		base.mu.Unlock()
	}()
	return base
}

// Get returns the base environment: nil and no error when there are no
// base requirements; ErrBuilding while it is built; the build's error
// (errors.Is ErrBuildFailed) when it failed.
func (x *Base) Get() (*Env, error) {
	if x == nil || x.done == nil {
		return nil, nil
	}
	select {
	case <-x.done:
	default:
		return nil, ErrBuilding
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.env, x.err
}

// Wait blocks until the build ended (or ctx did) and returns what Get
// then returns.
func (x *Base) Wait(ctx context.Context) (*Env, error) {
	if x == nil || x.done == nil {
		return nil, nil
	}
	select {
	case <-x.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return x.Get()
}

// Key is the base environment's content address; "" without
// requirements.
func (x *Base) Key() string {
	if x == nil {
		return ""
	}
	return x.key
}

// Preload lists the modules every run's template imports.
func (x *Base) Preload() []string {
	if x == nil {
		return nil
	}
	return slices.Clone(x.preload)
}
