package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/mcpfront"
	"github.com/skillgate/skillgate/metrics"
)

// mcpHolder lets the skill registry's reload callback, which may run on
// the watcher's goroutine at any time, reach the MCP server once it exists.
type mcpHolder struct {
	p atomic.Pointer[mcpfront.Server]
}

func (h *mcpHolder) refresh() {
	if s := h.p.Load(); s != nil {
		s.Refresh()
	}
}

// set publishes s and refreshes it, for a reload that happened while it
// was being built.
func (h *mcpHolder) set(s *mcpfront.Server) {
	h.p.Store(s)
	s.Refresh()
}

// newMCP builds the MCP server over the dispatcher, the same for /mcp
// (serve) and stdio (mcp), and publishes it to the skill reloads.
func (g *gateway) newMCP() (*mcpfront.Server, error) {
	opts := mcpfront.Options{
		Front: g.dispatch.Front(metrics.FrontMCP), Skills: g.skills, Tools: g.cfg.MCPTools, MaxSkillTools: g.cfg.MCPMaxSkillTools,
		Version: buildVersion(), Limiter: g.limiter, Logger: g.log.With().Str("component", "mcp").Logger(),
	}
	if g.role == roleStdio {
		// The stdio client presents no credential: it is the local user.
		id, err := opts.Front.Authenticate("", nil)
		if err != nil {
			return nil, err
		}
		opts.Identity = id
	}
	s, err := mcpfront.New(opts)
	if err != nil {
		return nil, fmt.Errorf("--mcp-tools: %w", err)
	}
	g.mcp.set(s)
	return s, nil
}

// openMCP serves the MCP front door at /mcp on the HTTP listener, with the
// listener's Origin and Host rules and its authentication.
func (g *gateway) openMCP(maxBody int) error {
	s, err := g.newMCP()
	if err != nil {
		return err
	}
	front := g.dispatch.Front(metrics.FrontMCP)
	g.front.Handle("/mcp", s.HTTPHandler(mcpfront.HTTPOptions{Authenticate: front.AuthenticateRequest, MaxBodyBytes: int64(maxBody),
		SessionTimeout: g.cfg.MCPSessionIdle, MaxSessions: g.cfg.MCPMaxSessions}))
	g.metrics.GaugeFunc("mcp", "sessions", "MCP Streamable HTTP sessions open (bounded by --mcp-max-sessions).",
		func() float64 { return float64(s.OpenSessions()) })
	return nil
}

func newMCPCommand() *cobra.Command {
	cfg := &serveConfig{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve one MCP client on stdin/stdout",
		Long: "Serve the skills to one Model Context Protocol client over stdio, in-process, as desktop\n" +
			"MCP hosts launch it (a \"command\" entry). Logs go to stderr. The client is trusted as the\n" +
			"local user: every method and namespace is open to it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadConfig(cmd); err != nil {
				return err
			}
			if err := cfg.validateLocal(); err != nil {
				return err
			}
			log, err := newLogger(cmd.ErrOrStderr(), cfg.LogLevel, cfg.LogFormat)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runMCP(ctx, cfg, log)
		},
	}
	registerLocalFlags(cmd.Flags(), cfg)
	return cmd
}

// runMCP serves stdio until the client closes stdin or a signal arrives;
// the gateway behind it is serve's (newGateway).
func runMCP(ctx context.Context, cfg *serveConfig, log zerolog.Logger) error {
	return runGateway(ctx, cfg, log, roleStdio)
}

// serveStdio serves the one MCP client on in and out until it closes in
// or ctx ends. Nothing else writes to out: logs go to stderr.
func (g *gateway) serveStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	g.log.Info().Str("version", buildVersion()).Msg("skillgate mcp serving on stdio")
	return g.mcp.p.Load().Run(ctx, mcpfront.StdioTransport(in, out, g.log.With().Str("component", "mcp").Logger()))
}

// maxInstanceDirs bounds the instance directories tried under a
// --data-dir that another process holds.
const maxInstanceDirs = 64

// openLocalBlobs opens the blob store of `skillgate mcp`. Desktop hosts
// start one process per window or per client, all with the same
// --data-dir, and a blob store directory serves one process at a time: a
// process that finds it held takes the first free instance directory
// under it (--data-dir/instances/<n>) for its blobs and run records, which
// it then does not share with the others, and says so.
func openLocalBlobs(ctx context.Context, cfg *serveConfig, log zerolog.Logger, m *metrics.Metrics) (blob.Store, error) {
	store, err := openBlobs(ctx, cfg, log, m)
	if !errors.Is(err, blob.ErrStoreLocked) || cfg.DataDir == "" {
		return store, err
	}
	base := cfg.DataDir
	for n := 1; n <= maxInstanceDirs; n++ {
		inst := *cfg
		inst.DataDir = filepath.Join(base, "instances", strconv.Itoa(n))
		store, err = openBlobs(ctx, &inst, log, m)
		if errors.Is(err, blob.ErrStoreLocked) {
			continue
		}
		if err != nil {
			return nil, err
		}
		log.Warn().Str("data_dir", base).Str("instance_dir", inst.DataDir).
			Msg("another skillgate process holds --data-dir: this one keeps its blobs and runs in an instance directory of its own, not shared with it (give each MCP host entry its own --data-dir to choose)")
		cfg.DataDir = inst.DataDir // the run records go with the blobs they name
		return store, nil
	}
	return nil, fmt.Errorf("--data-dir %s: it and its %d instance directories are all held by other skillgate processes; "+
		"give this one a --data-dir of its own: %w", base, maxInstanceDirs, blob.ErrStoreLocked)
}
