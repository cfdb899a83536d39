package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/session"
)

// soakClient is one client of the soak: it repeats its round of
// operations, pausing between them, until ctx ends.
type soakClient struct {
	name  string
	round func(ctx context.Context, c *soakCounts) error
	pause time.Duration
}

func (s soakClient) run(ctx context.Context, c *soakCounts, log zerolog.Logger) {
	for ctx.Err() == nil {
		if err := s.round(ctx, c); err != nil && ctx.Err() == nil {
			log.Warn().Err(err).Msg("soak: a round failed")
			sleepCtx(ctx, time.Second)
		}
		sleepCtx(ctx, s.pause)
	}
}

// soakRunCode is a trivial run that writes a little to its logs.
const soakRunCode = `def main(args):
    print("soak", args.get("i"))
    return {"ok": True}
`

// soakClients are the mix: a framed client (a connection kept for many
// rounds, reconnected now and then), an HTTP /rpc client (runs, blobs and
// chunked uploads) and an MCP client (a session per round, closed at its
// end).
func soakClients(g *floodGateway, pause time.Duration) []soakClient {
	framed := &framedSoak{addr: g.framed}
	hc := &soakHTTP{base: "http://" + g.http, hc: &http.Client{Timeout: time.Minute}}
	return []soakClient{
		{name: "framed", round: framed.round, pause: pause},
		{name: "http", round: hc.round, pause: pause},
		{name: "mcp", round: hc.mcpRound, pause: pause},
	}
}

// framedSoak keeps one framed connection for 50 rounds, then dials anew.
type framedSoak struct {
	addr   string
	conn   *session.Conn
	rounds int
}

func (f *framedSoak) round(ctx context.Context, c *soakCounts) (err error) {
	defer func() {
		if err != nil && f.conn != nil {
			_ = f.conn.Close()
			f.conn = nil
		}
	}()
	if f.conn == nil || f.rounds%50 == 0 {
		if f.conn != nil {
			_ = f.conn.Close()
		}
		f.conn, err = session.Dial(ctx, f.addr, nil, session.ClientConfig(), nil)
		if err != nil {
			return count(c, err)
		}
		if _, err = f.conn.Call(ctx, "Initialize", json.RawMessage(`{"protocol_version":"1.0","client":{"name":"soak","version":"1"}}`)); err != nil {
			return count(c, err)
		}
	}
	f.rounds++
	out, err := f.conn.Call(ctx, "run_code", map[string]any{"language": "python", "code": soakRunCode, "args": map[string]int{"i": f.rounds}})
	if err = count(c, errUnlessCompleted(out, err)); err != nil {
		return err
	}
	var blob struct {
		BlobID string `json:"blob_id"`
	}
	out, err = f.conn.Call(ctx, "create_blob", map[string]any{"content": strings.Repeat("soak ", 2000), "kind": "text/plain"})
	if err = count(c, decodeInto(out, err, &blob)); err != nil {
		return err
	}
	_, err = f.conn.Call(ctx, "read_blob", map[string]any{"blob_id": blob.BlobID})
	if err = count(c, err); err != nil {
		return err
	}
	_, err = f.conn.Call(ctx, "list_skills", map[string]any{})
	return count(c, err)
}

// soakHTTP is the HTTP /rpc and /mcp client.
type soakHTTP struct {
	base   string
	hc     *http.Client
	rounds int
}

func (h *soakHTTP) round(ctx context.Context, c *soakCounts) error {
	h.rounds++
	var out json.RawMessage
	if err := count(c, h.rpc(ctx, "run_code", map[string]any{"language": "python", "code": soakRunCode}, &out)); err != nil {
		return err
	}
	if err := count(c, errUnlessCompleted(out, nil)); err != nil {
		return err
	}
	// A chunked upload of 256 KiB, then a read of its first bytes.
	data := bytes.Repeat([]byte{byte(h.rounds)}, 256<<10)
	var up struct {
		UploadID      string `json:"upload_id"`
		MaxChunkBytes int    `json:"max_chunk_bytes"`
	}
	if err := count(c, h.rpc(ctx, "begin_upload", map[string]any{"kind": "application/octet-stream", "size_bytes": len(data)}, &up)); err != nil {
		return err
	}
	step := min(max(up.MaxChunkBytes, 1), 64<<10)
	for off := 0; off < len(data); off += step {
		end := min(off+step, len(data))
		chunk := map[string]any{"upload_id": up.UploadID, "offset": off, "encoding": "base64",
			"content": base64.StdEncoding.EncodeToString(data[off:end])}
		if err := count(c, h.rpc(ctx, "upload_chunk", chunk, nil)); err != nil {
			return err
		}
	}
	sum := sha256.Sum256(data)
	var blob struct {
		BlobID string `json:"blob_id"`
	}
	if err := count(c, h.rpc(ctx, "finish_upload", map[string]any{"upload_id": up.UploadID, "sha256": hex.EncodeToString(sum[:])}, &blob)); err != nil {
		return err
	}
	return count(c, h.rpc(ctx, "read_blob", map[string]any{"blob_id": blob.BlobID, "max_bytes": 1024}, nil))
}

var errRPC = errors.New("error response")

// rpc calls method over POST /rpc and decodes the result into out.
func (h *soakHTTP) rpc(ctx context.Context, method string, params any, out any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	resp, err := h.post(ctx, "/rpc", "", body)
	if err != nil {
		return err
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(resp.body, &msg); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if msg.Error != nil {
		return fmt.Errorf("%s: %w: %s", method, errRPC, msg.Error)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(msg.Result, out)
}

type httpAnswer struct {
	body    []byte
	session string
}

func (h *soakHTTP) post(ctx context.Context, path, session string, body []byte) (httpAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, bytes.NewReader(body))
	if err != nil {
		return httpAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		return httpAnswer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return httpAnswer{}, err
	}
	if resp.StatusCode/100 != 2 {
		return httpAnswer{}, fmt.Errorf("POST %s: %s: %.200s", path, resp.Status, data)
	}
	return httpAnswer{body: data, session: resp.Header.Get("Mcp-Session-Id")}, nil
}

// mcpRound opens an MCP session, lists the tools, runs code through the
// run_code tool and closes the session.
func (h *soakHTTP) mcpRound(ctx context.Context, c *soakCounts) error {
	init, err := h.post(ctx, "/mcp", "", []byte(mcpInitialize))
	if err = count(c, err); err != nil {
		return err
	}
	if init.session == "" {
		return count(c, errors.New("MCP initialize: no session id"))
	}
	defer h.closeMCP(init.session, c)
	if _, err := h.post(ctx, "/mcp", init.session, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); count(c, err) != nil {
		return err
	}
	list, err := h.post(ctx, "/mcp", init.session, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	if err = count(c, err); err != nil {
		return err
	}
	if !bytes.Contains(list.body, []byte(`"run_code"`)) {
		return count(c, errors.New("MCP tools/list: no run_code tool"))
	}
	call, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call",
		"params": map[string]any{"name": "run_code", "arguments": map[string]any{"language": "python", "code": soakRunCode}}})
	if err != nil {
		return err
	}
	res, err := h.post(ctx, "/mcp", init.session, call)
	if err == nil && (!bytes.Contains(res.body, []byte(`"result"`)) || bytes.Contains(res.body, []byte(`"isError":true`))) {
		err = fmt.Errorf("MCP run_code: %.300s", res.body)
	}
	return count(c, err)
}

// closeMCP ends a session with DELETE, as a client that is done does.
func (h *soakHTTP) closeMCP(session string, c *soakCounts) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, h.base+"/mcp", nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := h.hc.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			err = fmt.Errorf("DELETE /mcp: %s", resp.Status)
		}
	}
	_ = count(c, err)
}

// count counts one operation, failed when err is set, and returns err. An
// operation the soak's end cut short is not counted.
func count(c *soakCounts, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	c.ops.Add(1)
	if err != nil {
		c.errs.Add(1)
	}
	return err
}

func errUnlessCompleted(out json.RawMessage, err error) error {
	if err != nil {
		return err
	}
	var res struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Status != "completed" {
		return fmt.Errorf("run did not complete: %.300s", out)
	}
	return nil
}

func decodeInto(out json.RawMessage, err error, v any) error {
	if err != nil {
		return err
	}
	return json.Unmarshal(out, v)
}
