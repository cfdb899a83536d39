package sandbox

import "fmt"

// templateEntry is one environment's template in the Runner's set: ready
// is closed once the start ended, with z or err set. users counts the
// sandbox starts holding it: a template is stopped only when idle.
type templateEntry struct {
	env   Environment
	z     *zygote
	err   error
	ready chan struct{}
	users int    // guarded by zmu
	used  uint64 // tick of its last use, guarded by zmu
	bytes int64  // its memory once started (Pss), guarded by zmu
}

// template returns a live template for env, starting one (again) when
// there is none, and holds it until release is called. One template per
// environment in use: starts for the same environment wait for the same
// template, others go on beside it. Past MaxTemplates (or the warm memory
// budget) the least recently used idle template that is not the warm
// pool's is stopped; the sandboxes it made live on.
func (r *Runner) template(env Environment) (z *zygote, release func(), err error) {
	r.zmu.Lock()
	e := r.templates[env.Key]
	if e != nil && e.isDead() {
		if e.z != nil {
			r.zygoteRestarts.Add(1)
			r.log.Warn().Str("environment", env.Key).Str("state", e.z.cmd.ProcessState.String()).
				Msg("sandbox template exited; starting a new one")
		}
		delete(r.templates, env.Key)
		e = nil
	}
	starter := e == nil
	if starter {
		e = &templateEntry{env: env, ready: make(chan struct{})}
		r.templates[env.Key] = e
	}
	e.users++
	r.tick++
	e.used = r.tick
	r.zmu.Unlock()
	release = func() { r.releaseTemplate(e) }
	if starter {
		z, err := r.startZygote(env)
		var bytes int64
		if err == nil {
			bytes, _ = readPss(z.cmd.Process.Pid)
		}
		r.zmu.Lock()
		e.z, e.err, e.bytes = z, err, bytes
		close(e.ready)
		if err != nil && r.templates[env.Key] == e {
			delete(r.templates, env.Key)
		}
		stop := r.evictLocked()
		r.zmu.Unlock()
		stopAll(stop)
	}
	<-e.ready
	if e.err != nil {
		release()
		if env.Key != "" {
			return nil, nil, fmt.Errorf("environment %s: %w", env.Key, e.err)
		}
		return nil, nil, e.err
	}
	return e.z, release, nil
}

// isDead: the start failed or the template exited. Called with zmu held.
func (e *templateEntry) isDead() bool {
	select {
	case <-e.ready:
		return e.err != nil || !e.z.alive()
	default:
		return false // starting
	}
}

func (r *Runner) releaseTemplate(e *templateEntry) {
	r.zmu.Lock()
	e.users--
	stop := r.evictLocked()
	r.zmu.Unlock()
	stopAll(stop)
}

// evictLocked takes out of the set, least recently used first, idle
// templates other than the warm pool's while the set holds more than
// MaxTemplates or more memory than the warm memory budget leaves beside
// the pool's sandboxes. The caller stops them once zmu is released.
func (r *Runner) evictLocked() []*zygote {
	var stop []*zygote
	for r.overTemplateBudgetLocked() {
		var lru *templateEntry
		for key, e := range r.templates {
			if key == r.warmEnv.Key || e.users > 0 || e.z == nil {
				continue
			}
			if lru == nil || e.used < lru.used {
				lru = e
			}
		}
		if lru == nil {
			break // every other template is in use: it goes once idle
		}
		delete(r.templates, lru.env.Key)
		stop = append(stop, lru.z)
	}
	return stop
}

func (r *Runner) overTemplateBudgetLocked() bool {
	if len(r.templates) > r.cfg.MaxTemplates {
		return true
	}
	if r.cfg.WarmMemoryBytes <= 0 || len(r.templates) <= 1 {
		return false
	}
	total := r.poolSize.Load() * r.warmBytes.Load()
	for _, e := range r.templates {
		total += e.bytes
	}
	return total > r.cfg.WarmMemoryBytes
}

func stopAll(zs []*zygote) {
	for _, z := range zs {
		z.stop()
	}
}

// stopTemplates ends every template: at Close, and when the templates'
// user namespaces have id maps given up.
func (r *Runner) stopTemplates() {
	r.zmu.Lock()
	var stop []*zygote
	for key, e := range r.templates {
		select {
		case <-e.ready:
			if e.z != nil {
				stop = append(stop, e.z)
			}
		default: // its starter stops it: it finds itself out of the set
		}
		delete(r.templates, key)
	}
	r.zmu.Unlock()
	stopAll(stop)
}

// TemplateStats describe the Runner's templates.
type TemplateStats struct {
	Count int   // templates running, the warm pool's included
	Bytes int64 // their memory (proportional set sizes)
}

// Templates reports the templates running now.
func (r *Runner) Templates() TemplateStats {
	r.zmu.Lock()
	defer r.zmu.Unlock()
	var s TemplateStats
	for _, e := range r.templates {
		if e.z != nil && e.z.alive() {
			s.Count++
			s.Bytes += e.bytes
		}
	}
	return s
}

// WarmEnvironment is the environment the warm pool's sandboxes are made
// for.
func (r *Runner) WarmEnvironment() Environment {
	r.zmu.Lock()
	defer r.zmu.Unlock()
	return r.warmEnv
}

// SetWarmEnvironment makes the warm pool hold sandboxes of env from now
// on (the base environment every run gets, once it is built): the warm
// sandboxes of the previous one are torn down, and its template is
// stopped once it is the least recently used.
func (r *Runner) SetWarmEnvironment(env Environment) error {
	if err := env.validate(); err != nil {
		return fmt.Errorf("%w: %w", errInvalidConfig, err)
	}
	if !r.enter() {
		return ErrClosed
	}
	defer r.wg.Done()
	r.zmu.Lock()
	r.warmEnv = env
	r.zmu.Unlock()
	for range len(r.pool) {
		select {
		case sb := <-r.pool:
			if sb.env.Key == env.Key {
				r.offer(sb)
			} else {
				r.teardown(sb)
			}
		default:
		}
	}
	r.kick()
	return nil
}
