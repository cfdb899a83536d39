package skills

import (
	"fmt"
)

// PackageStatus is the outcome of loading one package folder.
type PackageStatus string

// Package outcomes.
const (
	StatusLoaded PackageStatus = "loaded"
	// StatusSkipped: invalid (or a duplicate) and not served.
	StatusSkipped PackageStatus = "skipped"
	// StatusKept: the folder's current content is invalid; the snapshot
	// last read from it while valid is still served.
	StatusKept PackageStatus = "kept_previous"
)

// PackageReport describes one package folder after a load.
type PackageReport struct {
	Dir     string        `json:"dir"`
	Name    string        `json:"name,omitempty"`
	Version string        `json:"version,omitempty"`
	Source  Source        `json:"source"`
	Status  PackageStatus `json:"status"`
	// Violations made the folder's current content invalid.
	Violations []Violation `json:"violations,omitempty"`
	// Warnings did not (skipped symlinks, unreadable files, duplicates won).
	Warnings []Violation `json:"warnings,omitempty"`
}

// LoadReport lists every package folder found, sorted by Dir.
type LoadReport struct {
	Packages []PackageReport `json:"packages"`
	// Skills is the number of snapshots served, built-ins included.
	Skills int `json:"skills"`
}

// Count returns how many packages ended with status st.
func (r LoadReport) Count(st PackageStatus) int {
	n := 0
	for _, p := range r.Packages {
		if p.Status == st {
			n++
		}
	}
	return n
}

// loadLocked loads every candidate folder, falls back to the last good
// snapshot of a folder that turned invalid, and settles duplicates: the
// first folder in byte order of path serves a (name, version), the others
// are skipped. It returns the snapshots to serve and the report.
func (r *Registry) loadLocked(cands []candidate) ([]*Skill, LoadReport) {
	lim := limits{maxFiles: r.opts.MaxSkillFiles, maxBytes: r.opts.MaxSkillBytes}
	good := make(map[string]*Skill, len(cands))
	rep := LoadReport{Packages: make([]PackageReport, len(cands))}
	skills := make([]*Skill, len(cands))
	for i, c := range cands {
		l := loadFolder(c.abs, lim)
		rep.Packages[i], skills[i] = r.settle(c.abs, l)
		if skills[i] != nil {
			good[c.abs] = skills[i]
		}
	}
	r.lastGood = good
	return dedupe(skills, rep), rep
}

// settle decides what one folder serves.
func (r *Registry) settle(dir string, l loaded) (PackageReport, *Skill) {
	pr := PackageReport{Dir: dir, Name: l.name, Version: l.version, Source: l.source,
		Violations: l.violations, Warnings: l.warnings}
	prev := r.lastGood[dir]
	switch {
	case l.skill != nil:
		pr.Status = StatusLoaded
		if prev != nil && prev.digest == l.skill.digest {
			return pr, prev // unchanged: keep the same snapshot value
		}
		return pr, l.skill
	case prev != nil:
		pr.Status, pr.Name, pr.Version = StatusKept, prev.Manifest.Name, prev.Manifest.Version
		return pr, prev
	}
	pr.Status = StatusSkipped
	return pr, nil
}

// dedupe keeps the first skill (in folder order) of each (name, version)
// and marks the other folders skipped, both sides reported.
func dedupe(skills []*Skill, rep LoadReport) []*Skill {
	winner := map[string]int{}
	out := make([]*Skill, 0, len(skills))
	for i, s := range skills {
		if s == nil {
			continue
		}
		key := s.Manifest.Name + "\x00" + s.Manifest.Version
		w, dup := winner[key]
		if !dup {
			winner[key] = i
			out = append(out, s)
			continue
		}
		loser, win := &rep.Packages[i], &rep.Packages[w]
		loser.Status = StatusSkipped
		loser.Violations = append(loser.Violations, Violation{
			Field: "/version", Expected: "a (name, version) served by no other folder", Actual: s.Manifest.Version,
			Message: fmt.Sprintf("duplicate of %s %s served from %s", s.Manifest.Name, s.Manifest.Version, win.Dir),
		})
		win.Warnings = append(win.Warnings, Violation{
			Field: "/version", Expected: "a (name, version) served by no other folder", Actual: s.Manifest.Version,
			Message: fmt.Sprintf("also defined in %s, which is skipped", loser.Dir),
		})
	}
	return out
}

// logReport writes one line per package that is not plainly loaded, and a
// summary.
func (r *Registry) logReport(rep LoadReport) {
	for _, p := range rep.Packages {
		var ev = r.log.Debug()
		msg := "skill package loaded"
		switch {
		case p.Status == StatusSkipped:
			ev, msg = r.log.Warn(), "skill package invalid, skipped"
		case p.Status == StatusKept:
			ev, msg = r.log.Warn(), "skill package invalid, previous snapshot kept"
		case p.Status == StatusBuilding:
			ev, msg = r.log.Info(), "skill package valid; offered once its python environment is built"
		case len(p.Warnings) > 0:
			ev, msg = r.log.Warn(), "skill package loaded with warnings"
		}
		ev = ev.Str("path", p.Dir).Str("name", p.Name).Str("version", p.Version).Str("source", string(p.Source))
		if len(p.Violations) > 0 {
			ev = ev.Array("violations", Violations(p.Violations))
		}
		if len(p.Warnings) > 0 {
			ev = ev.Array("warnings", Violations(p.Warnings))
		}
		ev.Msg(msg)
	}
	r.log.Info().Int("skills", rep.Skills).Int("loaded", rep.Count(StatusLoaded)).Int("building_environment", rep.Count(StatusBuilding)).
		Int("skipped", rep.Count(StatusSkipped)).Int("kept_previous", rep.Count(StatusKept)).
		Str("dir", r.root).Msg("skill catalog loaded")
}
