package mcpfront

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillgate/skillgate/skills"
)

// offered is what the SDK server holds from the catalog, keyed by tool or
// prompt name and resource URI, each with the digest of the skill version
// it came from, so that a reload touches only what changed (and the SDK
// sends list_changed only for the lists that did).
type offered struct {
	tools     map[string]string // name -> digest
	prompts   map[string]string
	resources map[string]string // uri -> digest
}

func newOffered() offered {
	return offered{tools: map[string]string{}, prompts: map[string]string{}, resources: map[string]string{}}
}

// Refresh makes the tools, prompts and resources match the catalog: what
// disappeared is removed, what is new or changed is (re)added.
func (s *Server) Refresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	cat := s.catalog()
	latest := defaultVersions(cat)
	want := newOffered()
	var tools []*skills.Skill
	for _, sk := range latest {
		if sk.Manifest.Kind == skills.KindAction {
			tools = append(tools, sk)
		}
	}
	skillTools := s.opts.Tools != ToolsProtocol && len(tools) <= s.opts.MaxSkillTools
	if s.opts.Tools != ToolsProtocol && !skillTools {
		s.opts.Logger.Warn().Int("action_skills", len(tools)).Int("max_skill_tools", s.opts.MaxSkillTools).
			Msg("more action skills than --mcp-max-skill-tools: MCP clients reach them through the protocol tools only")
	}
	bySkill := map[string]*skills.Skill{}
	for _, sk := range latest {
		bySkill[sk.Manifest.Name] = sk
		if skillTools && sk.Manifest.Kind == skills.KindAction && !isProtocolTool(sk.Manifest.Name) {
			want.tools[sk.Manifest.Name] = sk.Digest()
		}
		if sk.Manifest.Kind == skills.KindInstruction {
			want.prompts[sk.Manifest.Name] = sk.Digest()
		}
		for _, f := range sk.Files() {
			want.resources[skillURI(sk, f.Path)] = sk.Digest()
		}
	}
	s.syncTools(want.tools, bySkill)
	s.syncPrompts(want.prompts, bySkill)
	s.syncResources(want.resources, latest)
	s.have = want
	if changed := s.subs.changed(cat); len(changed) > 0 {
		// Off the reload's goroutine and lock: the SDK gives each
		// session up to 10 s to take a notification.
		go s.notifyUpdated(changed)
	}
}

func (s *Server) syncTools(want map[string]string, bySkill map[string]*skills.Skill) {
	var gone []string
	for name := range s.have.tools {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	for name, digest := range want {
		if s.have.tools[name] != digest {
			s.mcp.AddTool(skillTool(bySkill[name]), s.runSkill(name))
		}
	}
}

func (s *Server) syncPrompts(want map[string]string, bySkill map[string]*skills.Skill) {
	var gone []string
	for name := range s.have.prompts {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemovePrompts(gone...)
	}
	for name, digest := range want {
		if s.have.prompts[name] != digest {
			sk := bySkill[name]
			s.mcp.AddPrompt(&mcp.Prompt{Name: name, Title: sk.Title, Description: sk.Summary(),
				Arguments: []*mcp.PromptArgument{{Name: promptVersionArg,
					Description: "The skill version whose SKILL.md to use (default: the highest release)."}}},
				s.getPrompt(name))
		}
	}
}

func (s *Server) syncResources(want map[string]string, latest []*skills.Skill) {
	var gone []string
	for uri := range s.have.resources {
		if _, ok := want[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	for _, sk := range latest {
		for _, f := range sk.Files() {
			uri := skillURI(sk, f.Path)
			if s.have.resources[uri] == want[uri] {
				continue
			}
			size := f.Size
			s.mcp.AddResource(&mcp.Resource{URI: uri, Name: sk.Manifest.Name + "/" + f.Path, MIMEType: mimeType(f.Path), Size: size},
				s.readSkillFile(sk.Manifest.Name, sk.Manifest.Version, f.Path))
		}
	}
}

// defaultVersions returns, per skill name, the version a call without a
// version gets.
func defaultVersions(cat *skills.Catalog) []*skills.Skill {
	var out []*skills.Skill
	seen := map[string]bool{}
	for _, sk := range cat.All() {
		n := sk.Manifest.Name
		if seen[n] {
			continue
		}
		seen[n] = true
		if d, err := cat.Resolve(n, ""); err == nil {
			out = append(out, d)
		}
	}
	return out
}
