package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// The resource floods hold what the gateway keeps for a client between
// requests instead of what it queues for one: MCP sessions opened and
// never closed, and uploads begun and chunked but never finished. Each
// client reads every answer; what grows is the state left behind.

// resourceCounts is what the clients of a resource flood saw.
type resourceCounts struct {
	requests atomic.Int64 // requests answered
	accepted atomic.Int64 // sessions opened, or chunk bytes the gateway took
	refused  atomic.Int64 // answers refusing the request (a limit, a quota)
}

// resourceRow is what one resource flood measured.
type resourceRow struct {
	Scenario            string
	Requests, Refused   int64
	Accepted            string // what the clients left on the gateway
	Held                string // what the gateway reports holding at the end
	Bound               string // the configured bound on it
	Before, Peak, After int64
}

// runResourceFloods runs the MCP-session and upload floods, each against
// a fresh gateway started with the bounds of cfg.
func runResourceFloods(ctx context.Context, cfg floodConfig, which map[string]bool, log zerolog.Logger) ([]resourceRow, error) {
	type scenario struct {
		key, name string
		args      []string
		flood     func(ctx context.Context, addr string, c *resourceCounts)
		finish    func(g *floodGateway, c *resourceCounts, row *resourceRow)
	}
	scenarios := []scenario{
		{key: "mcp", name: "MCP sessions opened and never closed (POST /mcp initialize)",
			args: []string{"--mcp-max-sessions", strconv.Itoa(cfg.MCPMaxSessions), "--mcp-session-idle-timeout", "1h"},
			flood: func(ctx context.Context, addr string, c *resourceCounts) {
				floodMCPSessions(ctx, addr, cfg.ConnsPerClient, c)
			},
			finish: func(g *floodGateway, c *resourceCounts, row *resourceRow) {
				row.Accepted = fmt.Sprintf("%d sessions", c.accepted.Load())
				row.Held = fmt.Sprintf("%d sessions", g.counter("skillgate_mcp_sessions", ""))
				row.Bound = fmt.Sprintf("%d sessions (--mcp-max-sessions)", cfg.MCPMaxSessions)
			}},
		{key: "upload", name: "uploads begun and never finished (begin_upload, upload_chunk over POST /rpc)",
			args: []string{"--max-blob-store-bytes", strconv.FormatInt(cfg.MaxBlobStoreBytes, 10), "--blob-store", "memory"},
			flood: func(ctx context.Context, addr string, c *resourceCounts) {
				floodUploads(ctx, addr, cfg.UploadSize, c)
			},
			finish: func(g *floodGateway, c *resourceCounts, row *resourceRow) {
				row.Accepted = fmtMiB(c.accepted.Load()) + " of chunks"
				row.Held = fmtMiB(g.counter("skillgate_blobstore_bytes", "")) + " of blobs"
				row.Bound = fmtMiB(cfg.MaxBlobStoreBytes) + " (--max-blob-store-bytes)"
			}},
	}
	var rows []resourceRow
	for _, sc := range scenarios {
		if !which[sc.key] {
			continue
		}
		g, err := startFloodGateway(ctx, cfg, sc.args...)
		if err != nil {
			return nil, err
		}
		var c resourceCounts
		row, err := floodOnce(ctx, cfg, g, sc.name, func(ctx context.Context) (int64, error) {
			sc.flood(ctx, g.http, &c)
			return 0, nil
		})
		rr := resourceRow{Scenario: sc.name, Requests: c.requests.Load(), Refused: c.refused.Load(),
			Before: row.Before, Peak: row.Peak, After: row.After}
		if err == nil {
			sc.finish(g, &c, &rr)
		}
		g.stop()
		if err != nil {
			return nil, err
		}
		log.Info().Str("scenario", sc.name).Int64("peak_growth", rr.Peak-rr.Before).Msg("flood done")
		rows = append(rows, rr)
	}
	return rows, nil
}

const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
	`"capabilities":{},"clientInfo":{"name":"skillgate-bench","version":"1"}}}`

// floodMCPSessions opens MCP sessions over conns keep-alive connections,
// one initialize after another, and never closes one.
func floodMCPSessions(ctx context.Context, addr string, conns int, c *resourceCounts) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
	defer hc.CloseIdleConnections()
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(mcpInitialize))
				if err != nil {
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := hc.Do(req)
				if err != nil {
					sleepCtx(ctx, 10*time.Millisecond)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				c.requests.Add(1)
				switch {
				case resp.StatusCode == http.StatusOK && resp.Header.Get("Mcp-Session-Id") != "":
					c.accepted.Add(1)
				default:
					c.refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
}

// floodUploads begins uploads of size bytes and sends every chunk of each
// but never finishes one, then begins the next, until ctx ends.
func floodUploads(ctx context.Context, addr string, size int64, c *resourceCounts) {
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	call := func(method string, params any, out any) (refused bool, err error) {
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		if err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/rpc", bytes.NewReader(body))
		if err != nil {
			return false, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		var msg struct {
			Result json.RawMessage `json:"result"`
			Error  *struct{}       `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
			return false, err
		}
		c.requests.Add(1)
		if msg.Error != nil {
			c.refused.Add(1)
			return true, nil
		}
		return false, json.Unmarshal(msg.Result, out)
	}
	for ctx.Err() == nil {
		var up struct {
			UploadID      string `json:"upload_id"`
			MaxChunkBytes int64  `json:"max_chunk_bytes"`
		}
		refused, err := call("begin_upload", map[string]any{"kind": "application/octet-stream", "size_bytes": size}, &up)
		if err != nil || refused {
			sleepCtx(ctx, 50*time.Millisecond)
			continue
		}
		chunk := make([]byte, min(max(up.MaxChunkBytes, 1), 256<<10))
		content := base64.StdEncoding.EncodeToString(chunk)
		for off := int64(0); off < size && ctx.Err() == nil; off += int64(len(chunk)) {
			n := min(int64(len(chunk)), size-off)
			if n < int64(len(chunk)) {
				content = base64.StdEncoding.EncodeToString(chunk[:n])
			}
			var got struct {
				ReceivedBytes int64 `json:"received_bytes"`
			}
			refused, err := call("upload_chunk", map[string]any{"upload_id": up.UploadID, "offset": off, "content": content, "encoding": "base64"}, &got)
			if err != nil || refused {
				break
			}
			c.accepted.Add(n)
		}
	}
}

func writeResourceFloodTable(w io.Writer, cfg floodConfig, rows []resourceRow) {
	fmt.Fprintf(w, "\nResource floods: %d clients per scenario, %s each, reading every answer and leaving their state behind\n\n",
		cfg.Clients, cfg.Duration)
	fmt.Fprintln(w, "| scenario | requests | refused | the clients left | the gateway holds | configured bound | RSS before | RSS peak | peak growth | RSS after |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", r.Scenario, r.Requests, r.Refused, r.Accepted,
			r.Held, r.Bound, fmtMiB(r.Before), fmtMiB(r.Peak), fmtMiB(r.Peak-r.Before), fmtMiB(r.After))
	}
}
