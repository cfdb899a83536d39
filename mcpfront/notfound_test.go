package mcpfront

import (
	"os"
	"regexp"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An unknown or hidden resource is answered as the MCP specification has
// it since SEP-2164 (protocol 2026-07-28; the SDK's default): -32602
// "Resource not found" with the URI in data, not the earlier -32002; and
// docs/mcp.md gives the code the gateway sends.
func TestResourceNotFoundCodeAsDocumented(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: visibilitySkills(t), authFile: visibilityAuth()})
	reader := g.client(t, tokenReader, nil)
	for _, uri := range []string{"skill://acme.zz/1.0.0/SKILL.md", "skill://other.d.guide/1.0.0/SKILL.md", "blob://"} {
		_, err := reader.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		e := rpcErr(t, err)
		assert.EqualValues(t, -32602, e.Code, uri)
		assert.Equal(t, "Resource not found", e.Message, uri)
		assert.JSONEq(t, `{"uri":"`+uri+`"}`, string(e.Data), uri)
	}

	doc, err := os.ReadFile("../docs/mcp.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`"Resource not found",\s+(-\d+)`).FindSubmatch(doc)
	require.NotNil(t, m, "docs/mcp.md gives the code of an unknown resource")
	assert.Equal(t, "-32602", string(m[1]), "docs/mcp.md gives the code the gateway sends")
}
