package skills

import (
	"embed"
	"fmt"
	"io/fs"
	"sync"
)

// GuideName is the built-in instruction skill behind
// load_skills_protocol_guide.
const GuideName = "skills.protocol.guide"

//go:embed builtin
var builtinFS embed.FS

//go:embed builtin/skills.protocol.guide/SKILL.md
var guideMD string

// builtins parses the embedded skills once. They are checked by the same
// loader as packages on disk, with the reserved namespace allowed.
var builtins = sync.OnceValues(func() ([]*Skill, error) {
	dirs, err := fs.ReadDir(builtinFS, "builtin")
	if err != nil {
		return nil, fmt.Errorf("built-in skills: %w", err)
	}
	lim := limits{maxFiles: DefaultMaxSkillFiles, maxBytes: DefaultMaxSkillBytes}
	var out []*Skill
	for _, d := range dirs {
		sub, err := fs.Sub(builtinFS, "builtin/"+d.Name())
		if err != nil {
			return nil, fmt.Errorf("built-in skill %s: %w", d.Name(), err)
		}
		l := loadFS(sub, d.Name(), lim, true)
		if l.skill == nil {
			return nil, fmt.Errorf("built-in skill %s is invalid: %v", d.Name(), l.violations)
		}
		out = append(out, l.skill)
	}
	return out, nil
})

// Guide returns the whole SKILL.md (front matter and body) of the built-in
// skills.protocol.guide: the content load_skills_protocol_guide returns.
func Guide() string { return guideMD }
