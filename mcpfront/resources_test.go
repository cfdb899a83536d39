package mcpfront

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smallMessage makes read_skill_file and read_blob answer in windows of
// 12 KiB of encoded content (16 KiB less the response overhead), so that
// a file of a few tens of KiB takes several windows.
const smallMessage = 16 << 10

// windowText is 40,000 bytes of text with two- and three-byte characters,
// which read_skill_file never cuts apart.
func windowText() string {
	var b strings.Builder
	for i := 0; b.Len() < 40_000-8; i++ {
		b.WriteString([]string{"line ", "é", "€", "\n", "x"}[i%5])
	}
	for b.Len() < 40_000 {
		b.WriteByte('.')
	}
	return b.String()
}

// windowBinary is 30,001 bytes that are not text (NUL bytes), read as
// base64 in windows of 9,216 bytes.
func windowBinary() []byte {
	b := make([]byte, 30_001)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

// A skill file read as a resource is the whole file, read window by
// window through read_skill_file: text as text, anything else as bytes,
// each with its media type.
func TestSkillFileResourceReadWhole(t *testing.T) {
	dir := t.TempDir()
	files := instructionSkill("acme.docs.guide", "1.0.0", "Docs.", "Read the data files.\n")
	files["data/long.txt"] = windowText()
	files["data/blob.bin"] = string(windowBinary())
	files["data/small.md"] = "# small\n"
	files["data/empty.txt"] = ""
	files["NOTICE"] = "no extension\n"
	skillFiles(t, dir, "docs", files)
	g := newGateway(t, gatewayOptions{skillsDir: dir, maxMessage: smallMessage})
	cs := g.client(t, "", nil)
	read := func(uri string) *mcp.ResourceContents {
		t.Helper()
		res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		require.NoError(t, err, uri)
		require.Len(t, res.Contents, 1)
		assert.Equal(t, uri, res.Contents[0].URI)
		return res.Contents[0]
	}

	c := read("skill://acme.docs.guide/1.0.0/data/long.txt")
	assert.Equal(t, "text/plain; charset=utf-8", c.MIMEType)
	assert.Nil(t, c.Blob)
	require.Len(t, c.Text, 40_000)
	assert.Equal(t, windowText(), c.Text, "every window, in order, nothing twice")

	c = read("skill://acme.docs.guide/1.0.0/data/blob.bin")
	assert.Equal(t, "application/octet-stream", c.MIMEType)
	assert.Empty(t, c.Text)
	require.Len(t, c.Blob, 30_001)
	assert.True(t, bytes.Equal(windowBinary(), c.Blob), "every window, in order, nothing twice")

	c = read("skill://acme.docs.guide/1.0.0/data/small.md")
	assert.Equal(t, "text/markdown", c.MIMEType)
	assert.Equal(t, "# small\n", c.Text)

	c = read("skill://acme.docs.guide/1.0.0/NOTICE")
	assert.Equal(t, "text/plain", c.MIMEType, "a name without extension is plain text")
	assert.Equal(t, "no extension\n", c.Text)

	c = read("skill://acme.docs.guide/1.0.0/data/empty.txt")
	assert.Empty(t, c.Text)
	assert.Empty(t, c.Blob)

	// The resource list names each file with its size and media type.
	sizes := map[string]int64{}
	for r, err := range cs.Resources(t.Context(), nil) {
		require.NoError(t, err)
		if strings.HasPrefix(r.URI, "skill://acme.docs.guide/") {
			sizes[r.Name+" "+r.MIMEType] = r.Size
		}
	}
	assert.Equal(t, int64(40_000), sizes["acme.docs.guide/data/long.txt text/plain; charset=utf-8"])
	assert.Equal(t, int64(30_001), sizes["acme.docs.guide/data/blob.bin application/octet-stream"])
	assert.Equal(t, int64(8), sizes["acme.docs.guide/data/small.md text/markdown"])
}

// A resources/read answer is one message: a file of exactly 16 MiB is
// read whole, one byte more is refused, pointing at read_skill_file.
func TestSkillFileResourceSizeLimit(t *testing.T) {
	dir := t.TempDir()
	at := instructionSkill("acme.big.at", "1.0.0", "At the limit.", "Big.\n")
	at["big.txt"] = strings.Repeat("a", 16<<20)
	skillFiles(t, dir, "at", at)
	over := instructionSkill("acme.big.over", "1.0.0", "Over the limit.", "Big.\n")
	over["big.txt"] = strings.Repeat("a", 16<<20+1)
	skillFiles(t, dir, "over", over)
	g := newGateway(t, gatewayOptions{skillsDir: dir, maxMessage: 4 << 20, maxSkillBytes: 32 << 20})
	// The answer is a little over 16 MiB: over the SDK's default bound
	// on one server-sent event (and on a stdio line), lifted here.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: g.url, MaxRetries: -1, MaxEventSize: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })

	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "skill://acme.big.at/1.0.0/big.txt"})
	require.NoError(t, err)
	assert.Len(t, res.Contents[0].Text, 16<<20)

	_, err = cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "skill://acme.big.over/1.0.0/big.txt"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mcp: resource too large: big.txt is over 16777216 bytes; read it with read_skill_file")
}

// createBlob stores content through the create_blob tool and returns its id.
func createBlob(t *testing.T, cs *mcp.ClientSession, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "create_blob", Arguments: args})
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(res))
	var b struct {
		BlobID string `json:"blob_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(textOf(res)), &b))
	require.True(t, strings.HasPrefix(b.BlobID, "blob:"), b.BlobID)
	return b.BlobID
}

// blob://<hex> reads the caller's blob as read_blob's full mode does:
// text as text/plain, other kinds as bytes; a text whose escapes exceed
// one answer is cut and says so in _meta.
func TestBlobResource(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: t.TempDir(), maxMessage: smallMessage, authFile: visibilityAuth()})
	cs := g.client(t, tokenAll, nil)
	read := func(id string) *mcp.ResourceContents {
		t.Helper()
		uri := "blob://" + strings.TrimPrefix(id, "blob:")
		res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		require.NoError(t, err)
		require.Len(t, res.Contents, 1)
		assert.Equal(t, uri, res.Contents[0].URI)
		return res.Contents[0]
	}

	c := read(createBlob(t, cs, map[string]any{"content": "hello, blob\n"}))
	assert.Equal(t, "text/plain", c.MIMEType)
	assert.Equal(t, "hello, blob\n", c.Text)
	assert.Nil(t, c.Blob)
	assert.Nil(t, c.Meta, "whole: no truncation note")

	raw := []byte{0, 1, 2, 250, 251, 252, 0}
	c = read(createBlob(t, cs, map[string]any{"content": base64.StdEncoding.EncodeToString(raw), "kind": "application/octet-stream"}))
	assert.Equal(t, "application/octet-stream", c.MIMEType)
	assert.Equal(t, raw, c.Blob)
	assert.Empty(t, c.Text)

	// 12,288 quotes: exactly what one answer may carry raw, twice that
	// once escaped.
	quotes := strings.Repeat(`"`, 12_288)
	c = read(createBlob(t, cs, map[string]any{"content": quotes}))
	assert.Equal(t, "text/plain", c.MIMEType)
	assert.Less(t, len(c.Text), len(quotes))
	assert.Equal(t, strings.Repeat(`"`, len(c.Text)), c.Text)
	assert.Equal(t, mcp.Meta{"truncated": true, "size_bytes": float64(12_288)}, c.Meta)

	// Another identity's blob is not found, as read_blob answers it.
	runner := g.client(t, tokenRunner, nil)
	id := createBlob(t, cs, map[string]any{"content": "mine"})
	_, err := runner.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "blob://" + strings.TrimPrefix(id, "blob:")})
	e := rpcErr(t, err)
	assert.Contains(t, string(e.Data), `"string_code":"BLOB_NOT_FOUND"`)
}

// A blob URI that cannot name a blob is an unknown resource; one that
// names a malformed id gets read_blob's own refusal.
func TestBlobResourceBadURIs(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: t.TempDir()})
	cs := g.client(t, "", nil)
	for _, uri := range []string{"blob://", "blob://ab/cd", "blob://ab?x=1", "blob://ab:cd"} {
		_, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		assert.Equal(t, mcp.ResourceNotFoundError(uri), error(rpcErr(t, err)), uri)
	}
	_, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "blob://zz"})
	e := rpcErr(t, err)
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), e.Code)
	assert.Contains(t, string(e.Data), "blob_id")
}

// An instruction skill's prompt is its description and its SKILL.md body
// as one user message; an empty body is an empty message.
func TestInstructionSkillPrompt(t *testing.T) {
	dir := t.TempDir()
	skillFiles(t, dir, "g", instructionSkill("acme.style.guide", "1.0.0", "How ACME writes.", "# Style\n\nBe brief.\n"))
	skillFiles(t, dir, "e", instructionSkill("acme.empty.guide", "1.0.0", "Nothing to say.", ""))
	g := newGateway(t, gatewayOptions{skillsDir: dir})
	cs := g.client(t, "", nil)

	var prompts []string
	for p, err := range cs.Prompts(t.Context(), nil) {
		require.NoError(t, err)
		if p.Name == "acme.style.guide" {
			assert.Equal(t, "How ACME writes.", p.Description)
			assert.Equal(t, "Guide", p.Title)
		}
		prompts = append(prompts, p.Name)
	}
	assert.Contains(t, prompts, "acme.style.guide")
	assert.Contains(t, prompts, "acme.empty.guide")

	res, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "acme.style.guide"})
	require.NoError(t, err)
	assert.Equal(t, "How ACME writes.", res.Description)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, mcp.Role("user"), res.Messages[0].Role)
	assert.Equal(t, "# Style\n\nBe brief.\n", res.Messages[0].Content.(*mcp.TextContent).Text)

	res, err = cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "acme.empty.guide"})
	require.NoError(t, err)
	assert.Equal(t, "Nothing to say.", res.Description)
	assert.Equal(t, "", res.Messages[0].Content.(*mcp.TextContent).Text)
}

// The read_blob tool reads a blob larger than one answer in pieces, with
// mode "range" and offset, as the error of mode "full" tells the model to.
func TestReadBlobToolRange(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: t.TempDir(), maxMessage: smallMessage})
	cs := g.client(t, "", nil)
	text := windowText()
	id := createBlob(t, cs, map[string]any{"content": text, "kind": "text/plain"})
	read := func(args map[string]any) (*mcp.CallToolResult, error) {
		args["blob_id"] = id
		return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_blob", Arguments: args})
	}
	_, err := read(map[string]any{"mode": "full"})
	assert.Contains(t, string(rpcErr(t, err).Data), `\"mode\":\"range\"`, "full names the way to read it whole")

	var whole strings.Builder
	for offset, calls := 0, 0; ; calls++ {
		require.Less(t, calls, 20, "pieces move forward")
		res, err := read(map[string]any{"mode": "range", "offset": offset})
		require.NoError(t, err)
		var piece struct {
			Content    string `json:"content"`
			NextOffset *int   `json:"next_offset"`
		}
		require.NoError(t, json.Unmarshal([]byte(textOf(res)), &piece))
		whole.WriteString(piece.Content)
		if piece.NextOffset == nil {
			break
		}
		offset = *piece.NextOffset
	}
	assert.Equal(t, text, whole.String())
	_, err = read(map[string]any{"mode": "range", "offset": -1})
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr(t, err).Code, "a negative offset: the schema refuses it")
}
