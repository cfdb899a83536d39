package mcpfront

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillgate/skillgate/dispatch"
	sgauth "github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/skills"
)

// skillTemplate names any skill file of any version; the listed resources
// are the default versions' files only, and a client that wants another
// version fills the template in (helped by completion/complete).
const skillTemplate = "skill://{name}/{version}/{+path}"

// maxCompletions is the most values one completion answer may carry (the
// MCP specification's bound); Total and HasMore tell the rest.
const maxCompletions = 100

// promptVersionArg is the argument of every instruction skill's prompt:
// the version whose SKILL.md the prompt is (the default version if left
// out).
const promptVersionArg = "version"

// complete answers completion/complete for the skill:// template's
// arguments (name, version, path) and the prompts' version argument,
// from what the caller may see. A reference the caller cannot see, or
// that does not exist, gets no values rather than an error, so that the
// answer does not tell which of the two it is.
func (s *Server) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	var args map[string]string
	if p.Context != nil {
		args = p.Context.Arguments
	}
	id := s.identity(req)
	var values []string
	switch {
	case p.Ref.Type == "ref/resource" && p.Ref.URI == skillTemplate:
		values = s.completeSkillFile(id, p.Argument.Name, p.Argument.Value, args)
	case p.Ref.Type == "ref/prompt" && p.Argument.Name == promptVersionArg:
		if promptVisible(id, p.Ref.Name) {
			values = s.completeVersion(p.Ref.Name, p.Argument.Value, skills.KindInstruction)
		}
	}
	return completion(values), nil
}

// completeSkillFile completes one variable of skill://{name}/{version}/{+path};
// version and path need the name (and path the version, else the default)
// among the context's arguments.
func (s *Server) completeSkillFile(id *sgauth.Identity, arg, prefix string, ctx map[string]string) []string {
	if id == nil || !id.AllowsMethod(dispatch.MethodReadSkillFile) {
		return nil
	}
	cat := s.catalog()
	switch arg {
	case "name":
		var out []string
		for _, sk := range defaultVersions(cat) {
			n := sk.Manifest.Name
			if strings.HasPrefix(n, prefix) && dispatch.SeesSkill(id, n) {
				out = append(out, n)
			}
		}
		return out
	case "version":
		if name := ctx["name"]; dispatch.SeesSkill(id, name) {
			return s.completeVersion(name, prefix, "")
		}
	case "path":
		name := ctx["name"]
		if !dispatch.SeesSkill(id, name) {
			return nil
		}
		sk, err := cat.Resolve(name, ctx["version"])
		if err != nil {
			return nil
		}
		var out []string
		for _, f := range sk.Files() {
			if strings.HasPrefix(f.Path, prefix) {
				out = append(out, f.Path)
			}
		}
		return out
	}
	return nil
}

// completeVersion lists name's versions starting with prefix, highest
// first; kind, when set, is the kind the skill must be (a prompt is an
// instruction skill).
func (s *Server) completeVersion(name, prefix string, kind skills.Kind) []string {
	cat := s.catalog()
	if kind != "" {
		if sk, err := cat.Resolve(name, ""); err != nil || sk.Manifest.Kind != kind {
			return nil
		}
	}
	var out []string
	for _, v := range cat.Versions(name) {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}

// completion is the answer for values, cut to maxCompletions.
func completion(values []string) *mcp.CompleteResult {
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}
	if values == nil {
		res.Completion.Values = []string{}
	}
	if len(values) > maxCompletions {
		res.Completion.Values = values[:maxCompletions]
		res.Completion.HasMore = true
	}
	return res
}
