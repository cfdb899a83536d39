package pyenv

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

var keyPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Retain declares the environments owner (the skill registry, the base
// environment) needs, replacing what it declared before, and removes the
// directories no owner retains, no run holds and no build is writing.
// Owners are independent: the registry's reload does not drop the base.
func (b *Builder) Retain(owner string, keys []string) {
	set := map[string]bool{}
	for _, k := range keys {
		if k != "" {
			set[k] = true
		}
	}
	b.mu.Lock()
	b.retained[owner] = set
	doomed := b.unusedLocked()
	b.mu.Unlock()
	b.remove(doomed)
}

// Hold marks keys as in use by a run until release is called, so that a
// reload during the run does not remove the directories it has mounted.
// An environment dropped meanwhile is removed on the last release.
func (b *Builder) Hold(keys ...string) (release func()) {
	b.mu.Lock()
	for _, k := range keys {
		b.held[k]++
	}
	b.mu.Unlock()
	released := false
	return func() {
		b.mu.Lock()
		if released {
			b.mu.Unlock()
			return
		}
		released = true
		for _, k := range keys {
			if b.held[k]--; b.held[k] <= 0 {
				delete(b.held, k)
			}
		}
		doomed := b.unusedLocked()
		b.mu.Unlock()
		b.remove(doomed)
	}
}

// unusedLocked renames every unused environment out of its key's name
// (so no lookup finds it) and returns the new paths to remove.
func (b *Builder) unusedLocked() []string {
	if b.closed {
		return nil
	}
	entries, err := os.ReadDir(b.root)
	if err != nil {
		return nil
	}
	var doomed []string
	for _, e := range entries {
		k := e.Name()
		if !keyPattern.MatchString(k) || b.held[k] > 0 || b.inflight[k] != nil || b.retainedLocked(k) {
			continue
		}
		dir := filepath.Join(b.root, k)
		trash := filepath.Join(b.root, ".trash-"+k)
		_ = os.Chmod(dir, 0o755) // renaming a directory needs write access to it
		if err := os.Rename(dir, trash); err != nil {
			b.cfg.Logger.Warn().Err(err).Str("environment", k).Msg("cannot remove an unused python environment")
			continue
		}
		delete(b.envs, k)
		doomed = append(doomed, trash)
	}
	return doomed
}

func (b *Builder) retainedLocked(k string) bool {
	for _, set := range b.retained {
		if set[k] {
			return true
		}
	}
	return false
}

func (b *Builder) remove(dirs []string) {
	for _, d := range dirs {
		if err := removeTree(d); err != nil {
			b.cfg.Logger.Warn().Err(err).Str("dir", d).Msg("cannot remove an unused python environment")
			continue
		}
		b.cfg.Logger.Info().Str("environment", filepath.Base(d)[len(".trash-"):]).Msg("unused python environment removed")
	}
}

// Built lists the keys of the environments on disk, sorted.
func (b *Builder) Built() []string {
	entries, _ := os.ReadDir(b.root)
	var out []string
	for _, e := range entries {
		if keyPattern.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}
