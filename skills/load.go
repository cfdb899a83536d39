package skills

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/skillgate/skillgate/pyenv"
)

// candidate is one package folder found under the skills root.
type candidate struct {
	rel string // slash path relative to the root; "." for the root itself
	abs string
}

// discover walks root for skill folders: a folder holding skill.toml or
// SKILL.md is a skill and is not searched further; other folders are
// searched at any depth. Symlinked folders are not followed and ignored
// names (see ignoredName) are skipped. The result is sorted by rel.
func discover(root string) ([]candidate, error) {
	var out []candidate
	err := discoverDir(root, ".", &out)
	slices.SortFunc(out, func(a, b candidate) int { return strings.Compare(a.rel, b.rel) })
	return out, err
}

func discoverDir(abs, rel string, out *[]candidate) error {
	entries, err := os.ReadDir(abs)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == manifestFile || e.Name() == skillMDFile {
			*out = append(*out, candidate{rel: rel, abs: abs})
			return nil
		}
	}
	for _, e := range entries {
		if !e.IsDir() || ignoredName(e.Name()) {
			continue
		}
		// An unreadable subfolder does not stop the others from loading.
		_ = discoverDir(filepath.Join(abs, e.Name()), joinRel(rel, e.Name()), out)
	}
	return nil
}

func joinRel(rel, name string) string {
	if rel == "." {
		return name
	}
	return rel + "/" + name
}

// loaded is the outcome of reading one package folder.
type loaded struct {
	skill      *Skill // nil when invalid
	name       string // best effort, for reports of invalid packages
	version    string
	source     Source
	violations []Violation
	warnings   []Violation
}

// loadFolder reads and validates the package at abs through an os.Root, so
// no read (symlinks included) can leave the folder.
func loadFolder(abs string, lim limits) loaded {
	root, err := os.OpenRoot(abs)
	if err != nil {
		return loaded{violations: []Violation{{Expected: "a readable folder", Actual: err.Error(), Message: "cannot open the package folder"}}}
	}
	defer root.Close()
	l := loadFS(root.FS(), filepath.Base(abs), lim, false)
	if l.skill != nil {
		l.skill.Dir = abs
	}
	return l
}

// loadFS snapshots fsys and builds the skill, choosing the format by the
// presence of skill.toml.
func loadFS(fsys fs.FS, dirName string, lim limits, builtin bool) loaded {
	snap := readSnapshot(fsys, lim)
	hasManifest := false
	if _, err := fs.Lstat(fsys, manifestFile); err == nil {
		hasManifest = true
	}
	var l loaded
	if hasManifest {
		l = buildPackage(snap, builtin)
	} else {
		l = buildAgentSkill(snap, dirName)
	}
	l.violations = append(snap.violations, l.violations...)
	l.warnings = append(snap.warnings, l.warnings...)
	if len(l.violations) > 0 {
		l.skill = nil
	}
	return l
}

// requireFile fetches a required top-level file of the snapshot. A file
// left unread because a limit stopped the walk is not reported missing:
// the limit violation already says why.
func requireFile(c *collector, snap *snapshot, name string) ([]byte, bool) {
	f, ok := searchFiles(snap.files, name)
	if !ok && snap.stopped {
		return nil, false
	}
	if !ok {
		reason := "required file is missing"
		if r, refused := snap.refused[name]; refused {
			reason = "required file is a symlink that was not followed: " + r
		}
		c.add("", name, nil, "%s", reason)
		return nil, false
	}
	if !utf8.Valid(f.Data) {
		c.add("", "UTF-8 text", nil, "%s is not valid UTF-8", name)
		return nil, false
	}
	return f.Data, true
}

func buildPackage(snap *snapshot, builtin bool) loaded {
	l := loaded{source: SourcePackage}
	if builtin {
		l.source = SourceBuiltin
	}
	mc := &collector{file: manifestFile}
	var m Manifest
	if data, ok := requireFile(mc, snap, manifestFile); ok {
		var vs []Violation
		m, vs = parseManifest(data, builtin)
		mc.list = append(mc.list, vs...)
	}
	if m.Runtime != nil && m.Runtime.Entrypoint != "" {
		if _, ok := searchFiles(snap.files, m.Runtime.Entrypoint); !ok {
			mc.add("/runtime/entrypoint", "a file of the package", m.Runtime.Entrypoint, "entrypoint file not found in the package")
		}
	}
	args, output := loadSchemas(mc, snap, m.Runtime)
	rc := &collector{file: requirementsFile}
	reqs := loadRequirements(mc, rc, snap, m.Runtime)
	sc := &collector{file: skillMDFile}
	var front map[string]any
	var body string
	var pf packageFront
	if doc, ok := requireFile(sc, snap, skillMDFile); ok {
		if front, body, ok = parseFrontMatter(sc, doc); ok {
			pf = checkPackageFront(sc, front)
		}
	}
	l.name, l.version = m.Name, m.Version
	l.violations = append(append(mc.list, rc.list...), sc.list...)
	if len(l.violations) > 0 {
		return l
	}
	l.skill = newSkill(m, snap, l.source)
	l.skill.args, l.skill.output = args, output
	l.skill.requirements = reqs
	if m.Runtime != nil {
		l.skill.preload = m.Runtime.Preload
	}
	l.skill.Title, l.skill.ShortDescription, l.skill.Tags = pf.title, pf.shortDescription, pf.tags
	l.skill.Front, l.skill.Body = front, body
	return l
}

func buildAgentSkill(snap *snapshot, dirName string) loaded {
	l := loaded{source: SourceAgentSkill}
	sc, wc := &collector{file: skillMDFile}, &collector{file: skillMDFile}
	doc, ok := requireFile(sc, snap, skillMDFile)
	var front map[string]any
	var body string
	var af agentFront
	if ok {
		front, body = parseAgentFrontMatter(wc, doc)
		af = checkAgentFront(sc, wc, front, dirName, body)
	}
	l.name, l.violations, l.warnings = af.name, sc.list, wc.list
	if len(l.violations) > 0 {
		return l
	}
	l.version = agentSkillVersion(af.metadata)
	if v, ok := af.metadata["version"]; ok && v != l.version {
		l.warnings = append(l.warnings, Violation{File: skillMDFile, Field: "/metadata/version",
			Expected: "a semantic version like 1.2.0", Actual: clipActual(v), Message: "not a semantic version; served as 0.0.0"})
	}
	m := Manifest{
		Name: af.name, Version: l.version, Description: af.description,
		Kind: KindInstruction, Permissions: Permissions{Secrets: []string{}},
	}
	l.skill = newSkill(m, snap, SourceAgentSkill)
	l.skill.Title, l.skill.ShortDescription = af.name, l.skill.summary
	l.skill.Front, l.skill.Body = front, body
	return l
}

// agentSkillVersion takes metadata.version when it is a semantic version,
// else "0.0.0": Agent Skills have no version field of their own.
func agentSkillVersion(meta map[string]string) string {
	if v, ok := meta["version"]; ok {
		if _, err := ParseVersion(v); err == nil {
			return v
		}
	}
	return "0.0.0"
}

// newSkill assembles a Skill from a validated manifest and its snapshot.
func newSkill(m Manifest, snap *snapshot, src Source) *Skill {
	v, _ := ParseVersion(m.Version) // validated by the caller
	return &Skill{
		Manifest: m, Namespace: namespaceOf(m.Name), Source: src,
		version: v, digest: snap.digest(), files: snap.files, refused: snap.refused,
		summary: clipText(m.Description, maxAgentDescriptionLen),
	}
}

// loadRequirements gathers the skill's requirements: [runtime]
// requirements (checked by the manifest) and a requirements.txt beside
// skill.toml, which any skill.toml package may have (an instruction
// skill's scripts run in run_code with its environment). A distribution
// may be required in one of the two places only.
func loadRequirements(mc, rc *collector, snap *snapshot, rt *Runtime) []pyenv.Requirement {
	var out []pyenv.Requirement
	if rt != nil {
		for _, s := range rt.Requirements {
			r, _ := pyenv.ParseRequirement(s) // validated by the manifest
			out = append(out, r)
		}
	}
	f, ok := searchFiles(snap.files, requirementsFile)
	if !ok {
		return out
	}
	fromFile, err := pyenv.ParseRequirementsFile(f.Data)
	if err != nil {
		rc.add("", "a requirements file of PEP 508 requirements, each optionally with --hash=sha256:<hex>", nil, "%v", err)
		return nil
	}
	for _, r := range fromFile {
		if slices.ContainsFunc(out, func(o pyenv.Requirement) bool { return o.Key() == r.Key() }) {
			mc.add("/runtime/requirements", "each distribution required in skill.toml or in requirements.txt, not both", r.Name,
				"%s is required in both skill.toml and requirements.txt", r.Key())
			continue
		}
		out = append(out, r)
	}
	return out
}
