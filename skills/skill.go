package skills

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pyenv"
)

// Source tells where a skill came from.
type Source string

// The sources of skills.
const (
	SourcePackage    Source = "package"     // skill.toml + SKILL.md
	SourceAgentSkill Source = "agent_skill" // a folder with only an Agent Skills SKILL.md
	SourceBuiltin    Source = "builtin"     // compiled into the gateway
)

// Skill is an immutable snapshot of one (name, version): its manifest, its
// SKILL.md and every file of its folder as read at load time. Later edits
// on disk never change it; a reload builds new Skill values. Exported fields
// are read-only by contract; a Skill is safe for concurrent use.
type Skill struct {
	Manifest Manifest
	// Namespace is the first dotted segment of the name ("acme" for
	// acme.math.add; the whole name for an Agent Skills name).
	Namespace string
	// Title is the display name from SKILL.md front matter (the name
	// itself for Agent Skills).
	Title string
	// ShortDescription comes from SKILL.md front matter (short_description,
	// or description for Agent Skills).
	ShortDescription string
	Tags             []string
	// Front is the whole SKILL.md front matter, JSON-safe.
	Front map[string]any
	// Body is SKILL.md without its front matter.
	Body   string
	Source Source
	// Dir is the folder the snapshot was read from ("" for built-ins).
	Dir string

	version Version
	summary string // Manifest.Description shortened for listings
	digest  string
	files   []File            // sorted by path
	refused map[string]string // symlinks not followed
	args    *compiledSchema   // [runtime] args_schema; nil: none
	output  *compiledSchema   // [runtime] output_schema; nil: none

	requirements []pyenv.Requirement // skill.toml and requirements.txt; nil: none
	preload      []string
	// envKey is the content address of the environment of requirements,
	// set by the registry before the snapshot is first published; "" when
	// there are no requirements.
	envKey string
}

// Requirements are the skill's declared Python requirements, parsed
// ([runtime] requirements and requirements.txt), in a new slice.
func (s *Skill) Requirements() []pyenv.Requirement { return slices.Clone(s.requirements) }

// Preload lists the modules the skill's runs want imported in their
// template ([runtime] preload).
func (s *Skill) Preload() []string { return slices.Clone(s.preload) }

// EnvironmentKey is the content address of the skill's environment; ""
// when it declares no requirements. Catalog.Environment gives the built
// environment.
func (s *Skill) EnvironmentKey() string { return s.envKey }

// Summary is the description as listings show it: at most 1,024
// characters. Only an Agent Skill's description can be longer (it loads with
// a warning); describe_skill returns Manifest.Description whole.
func (s *Skill) Summary() string { return s.summary }

// SemVer returns the parsed version.
func (s *Skill) SemVer() Version { return s.version }

// Digest is a sha256 (hex) over the sorted list of (path, sha256) of the
// snapshot's files: equal digests mean identical contents.
func (s *Skill) Digest() string { return s.digest }

// TotalBytes is the sum of the sizes of the snapshot's files.
func (s *Skill) TotalBytes() int64 {
	var n int64
	for _, f := range s.files {
		n += f.Size
	}
	return n
}

// Files lists the snapshot's files sorted by path, in a new slice.
func (s *Skill) Files() []FileInfo {
	out := make([]FileInfo, len(s.files))
	for i, f := range s.files {
		out[i] = f.FileInfo
	}
	return out
}

// FileData returns the snapshot's files with their contents, sorted by
// path, so a sandbox can lay the skill out. The slice is new; the Data
// slices are shared with the snapshot and must not be modified.
func (s *Skill) FileData() []File { return slices.Clone(s.files) }

// ReadFile returns a copy of the file at p, a slash path relative to the
// skill folder ("./" prefixes and "." elements allowed). It returns
// ErrPathRefused for absolute paths, any ".." element, backslashes, NUL
// bytes and symlinks that were not followed, and ErrFileNotFound for a
// clean path that names no file (folders included).
func (s *Skill) ReadFile(p string) ([]byte, FileInfo, error) {
	f, err := s.find(p)
	if err != nil {
		return nil, FileInfo{}, fmt.Errorf("read %s file %q: %w", s.Manifest.Name, p, err)
	}
	return slices.Clone(f.Data), f.FileInfo, nil
}

// Stat returns the FileInfo of the file at p with the rules of ReadFile.
func (s *Skill) Stat(p string) (FileInfo, error) {
	f, err := s.find(p)
	if err != nil {
		return FileInfo{}, fmt.Errorf("stat %s file %q: %w", s.Manifest.Name, p, err)
	}
	return f.FileInfo, nil
}

func (s *Skill) find(p string) (File, error) {
	clean, err := cleanFilePath(p)
	if err != nil {
		return File{}, err
	}
	if s.refusedPath(clean) {
		return File{}, fmt.Errorf("symlink not served: %w", ErrPathRefused)
	}
	f, ok := searchFiles(s.files, clean)
	if !ok {
		return File{}, ErrFileNotFound
	}
	return f, nil
}

// refusedPath reports whether clean is, or lies under, a skipped symlink.
func (s *Skill) refusedPath(clean string) bool {
	for p := clean; p != "."; p = path.Dir(p) {
		if _, ok := s.refused[p]; ok {
			return true
		}
	}
	return false
}

// cleanFilePath validates a requested file path before any lookup.
func cleanFilePath(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("empty path: %w", ErrPathRefused)
	case strings.ContainsAny(p, "\\\x00"):
		return "", fmt.Errorf("backslash or NUL in path: %w", ErrPathRefused)
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("absolute path: %w", ErrPathRefused)
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." {
			return "", fmt.Errorf("path climbs with ..: %w", ErrPathRefused)
		}
	}
	clean := path.Clean(p)
	if !fs.ValidPath(clean) || clean == "." {
		return "", fmt.Errorf("not a file path: %w", ErrPathRefused)
	}
	return clean, nil
}
