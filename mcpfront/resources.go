package mcpfront

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/skills"
)

// maxResourceBytes bounds a skill file read as one resource: read_skill_file
// answers a window at a time, and a resources/read answer is one message.
const maxResourceBytes = 16 << 20

// skillURI names a skill file: skill://<name>/<version>/<path>, each path
// segment escaped.
func skillURI(sk *skills.Skill, p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "skill://" + sk.Manifest.Name + "/" + sk.Manifest.Version + "/" + strings.Join(segs, "/")
}

// skillOfURI is the skill name of a skill:// URI ("" for others).
func skillOfURI(uri string) string {
	rest, ok := strings.CutPrefix(uri, "skill://")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// mimeType guesses a skill file's media type from its name; the skill
// formats' own files get theirs.
func mimeType(p string) string {
	switch ext := strings.ToLower(path.Ext(p)); ext {
	case ".md":
		return "text/markdown"
	case ".toml":
		return "application/toml"
	case ".py":
		return "text/x-python"
	case "":
		return "text/plain"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
		return "application/octet-stream"
	}
}

// readSkillFile reads a whole skill file through read_skill_file, window
// by window, so the caller's permissions apply as on every front door.
func (s *Server) readSkillFile(name, version, p string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		var text strings.Builder
		var bin []byte
		isText := true
		for offset := int64(0); ; {
			params, err := json.Marshal(map[string]any{"name": name, "version": version, "path": p, "offset": offset})
			if err != nil {
				return nil, err
			}
			f, err := callFor[dispatch.SkillFile](ctx, s, req, dispatch.MethodReadSkillFile, params, nil)
			if err != nil {
				return nil, err
			}
			if f.Encoding == dispatch.EncodingBase64 {
				isText = false
				b, err := base64.StdEncoding.DecodeString(f.Content)
				if err != nil {
					return nil, fmt.Errorf("read_skill_file %s: %w", p, err)
				}
				bin = append(bin, b...)
			} else {
				text.WriteString(f.Content)
				bin = append(bin, f.Content...)
			}
			if len(bin) > maxResourceBytes {
				return nil, fmt.Errorf("%w: %s is over %d bytes; read it with read_skill_file", ErrResourceTooLarge, p, maxResourceBytes)
			}
			if !f.Truncated || f.NextOffset == nil || *f.NextOffset <= offset {
				break
			}
			offset = *f.NextOffset
		}
		c := &mcp.ResourceContents{URI: req.Params.URI, MIMEType: mimeType(p)}
		if isText {
			c.Text = text.String()
		} else {
			c.Blob = bin
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
	}
}

// readTemplateSkillFile reads a skill file named through the skill://
// template: any version, not only the listed default ones. The filter
// has checked that the caller may see the skill; a file that does not
// exist is a resource not found.
func (s *Server) readTemplateSkillFile(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	name, version, p, ok := parseSkillURI(uri)
	if !ok || fileSHA(s.catalog(), uri) == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return s.readSkillFile(name, version, p)(ctx, req)
}

// blobURI names a blob as a resource: blob://<hex> for the blob id
// blob:<hex>, since a URI template variable cannot hold the colon.
func blobURI(id string) string { return "blob://" + strings.TrimPrefix(id, "blob:") }

// readBlob reads blob://<id> as read_blob reads it in full mode: the
// caller's own blobs only, capped as read_blob caps them.
func (s *Server) readBlob(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	hex, ok := strings.CutPrefix(req.Params.URI, "blob://")
	if !ok || hex == "" || strings.ContainsAny(hex, "/?#:") {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	id := "blob:" + hex
	params, err := json.Marshal(map[string]any{"blob_id": id, "mode": "full"})
	if err != nil {
		return nil, err
	}
	b, err := callFor[dispatch.ReadBlobResult](ctx, s, req, dispatch.MethodReadBlob, params, nil)
	if err != nil {
		return nil, err
	}
	c := &mcp.ResourceContents{URI: req.Params.URI, MIMEType: "text/plain"}
	if b.Encoding == dispatch.EncodingBase64 {
		c.MIMEType = "application/octet-stream"
		if c.Blob, err = base64.StdEncoding.DecodeString(b.Content); err != nil {
			return nil, fmt.Errorf("read_blob %s: %w", id, err)
		}
	} else {
		c.Text = b.Content
	}
	if b.Truncated {
		c.Meta = mcp.Meta{"truncated": true, "size_bytes": b.SizeBytes}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// getPrompt answers an instruction skill's prompt: its SKILL.md body.
func (s *Server) getPrompt(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		p := map[string]any{"name": name, "detail": "full"}
		if v := req.Params.Arguments[promptVersionArg]; v != "" {
			p["version"] = v
		}
		params, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		d, err := callFor[dispatch.DescribeSkillResult](ctx, s, req, dispatch.MethodDescribeSkill, params, nil)
		if err != nil {
			return nil, err
		}
		body := ""
		if d.Skill.SkillMD != nil {
			body = *d.Skill.SkillMD
		}
		return &mcp.GetPromptResult{Description: d.Skill.Description,
			Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: body}}}}, nil
	}
}
