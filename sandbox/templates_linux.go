package sandbox

import "fmt"

// templateEntry is one environment's template in the Runner's set: ready
// is closed once the start ended, with tpl or err set. users counts the
// sandbox starts holding it: a template is stopped only when idle.
type templateEntry struct {
	env   Environment
	tpl   *template
	err   error
	ready chan struct{}
	users int    // guarded by tmu
	used  uint64 // tick of its last use, guarded by tmu
	bytes int64  // its memory once started (Pss), guarded by tmu
}

// template returns a live template for env, starting one (again) when
// there is none, and holds it until release is called. One template per
// environment in use: starts for the same environment wait for the same
// template, others go on beside it. Past MaxTemplates (or the warm memory
// budget) the least recently used idle template that is not the warm
// pool's is stopped; the sandboxes it made live on.
func (r *Runner) acquireTemplate(env Environment) (tpl *template, release func(), err error) {
	r.tmu.Lock()
	e := r.templates[env.Key]
	if e != nil && e.isDead() {
		if e.tpl != nil {
			r.templateRestarts.Add(1)
			r.log.Warn().Str("environment", env.Key).Str("state", e.tpl.cmd.ProcessState.String()).
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
	r.tmu.Unlock()
	release = func() { r.releaseTemplate(e) }
	if starter {
		tpl, err := r.startTemplate(env)
		var bytes int64
		if err == nil {
			bytes, _ = readPss(tpl.cmd.Process.Pid)
		}
		r.tmu.Lock()
		e.tpl, e.err, e.bytes = tpl, err, bytes
		close(e.ready)
		if err != nil && r.templates[env.Key] == e {
			delete(r.templates, env.Key)
		}
		stop := r.evictLocked()
		r.tmu.Unlock()
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
	return e.tpl, release, nil
}

// isDead: the start failed or the template exited. Called with tmu held.
func (e *templateEntry) isDead() bool {
	select {
	case <-e.ready:
		return e.err != nil || !e.tpl.alive()
	default:
		return false // starting
	}
}

func (r *Runner) releaseTemplate(e *templateEntry) {
	r.tmu.Lock()
	e.users--
	stop := r.evictLocked()
	r.tmu.Unlock()
	stopAll(stop)
}

// evictLocked takes out of the set, least recently used first, idle
// templates other than the warm pool's while the set holds more than
// MaxTemplates or more memory than the warm memory budget leaves beside
// the pool's sandboxes. The caller stops them once tmu is released.
func (r *Runner) evictLocked() []*template {
	var stop []*template
	for r.overTemplateBudgetLocked() {
		var lru *templateEntry
		for key, e := range r.templates {
			if key == r.warmEnv.Key || e.users > 0 || e.tpl == nil {
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
		stop = append(stop, lru.tpl)
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

func stopAll(zs []*template) {
	for _, tpl := range zs {
		tpl.stop()
	}
}

// stopTemplates ends every template: at Close, and when the templates'
// user namespaces have id maps given up.
func (r *Runner) stopTemplates() {
	r.tmu.Lock()
	var stop []*template
	for key, e := range r.templates {
		select {
		case <-e.ready:
			if e.tpl != nil {
				stop = append(stop, e.tpl)
			}
		default: // its starter stops it: it finds itself out of the set
		}
		delete(r.templates, key)
	}
	r.tmu.Unlock()
	stopAll(stop)
}

// Templates reports the templates running now.
func (r *Runner) Templates() TemplateStats {
	r.tmu.Lock()
	defer r.tmu.Unlock()
	var s TemplateStats
	for _, e := range r.templates {
		if e.tpl != nil && e.tpl.alive() {
			s.Count++
			s.Bytes += e.bytes
		}
	}
	return s
}

// WarmEnvironment is the environment the warm pool's sandboxes are made
// for.
func (r *Runner) WarmEnvironment() Environment {
	r.tmu.Lock()
	defer r.tmu.Unlock()
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
	r.tmu.Lock()
	r.warmEnv = env
	r.tmu.Unlock()
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
