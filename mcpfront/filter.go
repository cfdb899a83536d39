package mcpfront

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillgate/skillgate/dispatch"
	sgauth "github.com/skillgate/skillgate/dispatch/auth"
)

// filterLists shows each identity only the tools, resources and prompts
// its methods and namespaces reach, and answers the others as unknown, so
// that a call does not tell whether something exists.
func (s *Server) filterLists(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		id := s.identity(req)
		if err := hidden(id, req); err != nil {
			return nil, err
		}
		res, err := next(context.WithValue(ctx, callerKey{}, id), method, req)
		if err != nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.ListToolsResult:
			r.Tools = keep(r.Tools, func(t *mcp.Tool) bool { return toolVisible(id, t.Name) })
		case *mcp.ListResourcesResult:
			r.Resources = keep(r.Resources, func(x *mcp.Resource) bool { return resourceVisible(id, x.URI) })
		case *mcp.ListResourceTemplatesResult:
			r.ResourceTemplates = keep(r.ResourceTemplates, func(t *mcp.ResourceTemplate) bool {
				if t.URITemplate == skillTemplate {
					return id != nil && id.AllowsMethod(dispatch.MethodReadSkillFile)
				}
				return id != nil && id.AllowsMethod(dispatch.MethodReadBlob)
			})
		case *mcp.ListPromptsResult:
			r.Prompts = keep(r.Prompts, func(p *mcp.Prompt) bool { return promptVisible(id, p.Name) })
		}
		return res, nil
	}
}

// hidden refuses a call of something the identity cannot see, with the
// SDK's own answer for an unknown name.
func hidden(id *sgauth.Identity, req mcp.Request) error {
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if !toolVisible(id, r.Params.Name) {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", r.Params.Name)}
		}
	case *mcp.ReadResourceRequest:
		if !resourceVisible(id, r.Params.URI) {
			return mcp.ResourceNotFoundError(r.Params.URI)
		}
	case *mcp.GetPromptRequest:
		if !promptVisible(id, r.Params.Name) {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", r.Params.Name)}
		}
	}
	return nil
}

func toolVisible(id *sgauth.Identity, name string) bool {
	if id == nil {
		return false
	}
	if isProtocolTool(name) {
		return id.AllowsMethod(name)
	}
	return id.AllowsMethod(dispatch.MethodExecuteSkill) && dispatch.SeesSkill(id, name)
}

func resourceVisible(id *sgauth.Identity, uri string) bool {
	if id == nil {
		return false
	}
	if name := skillOfURI(uri); name != "" {
		return id.AllowsMethod(dispatch.MethodReadSkillFile) && dispatch.SeesSkill(id, name)
	}
	return id.AllowsMethod(dispatch.MethodReadBlob)
}

func promptVisible(id *sgauth.Identity, name string) bool {
	return id != nil && id.AllowsMethod(dispatch.MethodDescribeSkill) && dispatch.SeesSkill(id, name)
}

func keep[T any](xs []T, ok func(T) bool) []T {
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}
