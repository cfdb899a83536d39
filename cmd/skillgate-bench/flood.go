package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/transport"
)

// floodConfig describes a flood run: clients that send as fast as they can
// and never read, against a gateway this command starts.
type floodConfig struct {
	Bin            string        // the gateway binary
	Clients        int           // flooding clients per scenario
	ConnsPerClient int           // HTTP only: connections each client opens
	Duration       time.Duration // how long each scenario floods
	MaxQueued      int           // the gateway's --max-queued-bytes
	WriteTimeout   time.Duration // the gateway's --write-timeout

	Scenarios         string // comma-separated: framed, http, mcp, upload
	MCPMaxSessions    int    // the gateway's --mcp-max-sessions
	MaxBlobStoreBytes int64  // the gateway's --max-blob-store-bytes
	UploadSize        int64  // the size_bytes of each unfinished upload
}

// floodRow is what one scenario measured: the gateway's RSS before, at its
// peak during, and after the flood, against the configured bound.
type floodRow struct {
	Scenario            string
	Before, Peak, After int64
	Bound               int64 // what the configured queue limits allow the clients to pin
	SlowReaders         int64
	Sent                int64 // bytes the clients managed to send
}

func cmdFlood(ctx context.Context, args []string, stdout io.Writer, log zerolog.Logger) error {
	var cfg floodConfig
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	fs.StringVar(&cfg.Bin, "bin", "bin/skillgate", "the gateway binary (make build)")
	fs.IntVar(&cfg.Clients, "clients", 4, "flooding clients per scenario")
	fs.IntVar(&cfg.ConnsPerClient, "http-conns", 16, "HTTP: connections each client floods at once")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long each scenario floods")
	fs.IntVar(&cfg.MaxQueued, "max-queued-bytes", 8<<20, "the gateway's --max-queued-bytes")
	fs.DurationVar(&cfg.WriteTimeout, "write-timeout", 5*time.Second, "the gateway's --write-timeout")
	fs.StringVar(&cfg.Scenarios, "scenarios", "framed,http,mcp,upload", "floods to run: framed and http (clients that never read), mcp and upload (state left behind)")
	fs.IntVar(&cfg.MCPMaxSessions, "mcp-max-sessions", 1024, "the gateway's --mcp-max-sessions")
	fs.Int64Var(&cfg.MaxBlobStoreBytes, "max-blob-store-bytes", 64<<20, "the gateway's --max-blob-store-bytes")
	fs.Int64Var(&cfg.UploadSize, "upload-size", 8<<20, "the size_bytes of each upload the upload flood begins and never finishes")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if cfg.Clients < 1 || cfg.Duration <= 0 || cfg.ConnsPerClient < 1 || cfg.UploadSize < 1 || cfg.MaxBlobStoreBytes < 1 {
		return fmt.Errorf("%w: --clients, --http-conns, --duration, --upload-size and --max-blob-store-bytes must be positive", errUsage)
	}
	which := map[string]bool{}
	for _, sc := range strings.Split(cfg.Scenarios, ",") {
		switch sc = strings.TrimSpace(sc); sc {
		case "framed", "http", "mcp", "upload":
			which[sc] = true
		default:
			return fmt.Errorf("%w: --scenarios takes framed, http, mcp and upload, not %q", errUsage, sc)
		}
	}
	rows, err := runFlood(ctx, cfg, which, log)
	if err != nil {
		return err
	}
	if len(rows) > 0 {
		writeFloodTable(stdout, cfg, rows)
	}
	res, err := runResourceFloods(ctx, cfg, which, log)
	if err != nil {
		return err
	}
	if len(res) > 0 {
		writeResourceFloodTable(stdout, cfg, res)
	}
	return nil
}

// floodGateway is the gateway process under a flood.
type floodGateway struct {
	cmd                   *exec.Cmd
	framed, http, metrics string
	done                  chan struct{}
}

func startFloodGateway(ctx context.Context, cfg floodConfig, extra ...string) (*floodGateway, error) {
	flags := []string{"--init-timeout", "0", "--keepalive-interval", "1h", "--keepalive-timeout", "1h",
		"--max-queued-bytes", strconv.Itoa(cfg.MaxQueued), "--write-timeout", cfg.WriteTimeout.String(),
		"--sandbox-workers", "0", "--drain-timeout", "1s"}
	return launchGateway(ctx, cfg.Bin, 20*time.Second, append(flags, extra...)...)
}

// launchGateway starts bin serve on three free loopback addresses (framed,
// HTTP, metrics), logging errors only, with flags, and waits up to ready
// for it to accept connections.
func launchGateway(ctx context.Context, bin string, ready time.Duration, flags ...string) (*floodGateway, error) {
	g := &floodGateway{done: make(chan struct{})}
	for _, a := range []*string{&g.framed, &g.http, &g.metrics} {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		*a = addr
	}
	args := append([]string{"serve", "--listen", g.framed, "--http-listen", g.http, "--metrics-listen", g.metrics,
		"--log-level", "error"}, flags...)
	g.cmd = exec.Command(bin, args...)
	g.cmd.Env = serverEnv()
	g.cmd.Stdout, g.cmd.Stderr = io.Discard, os.Stderr
	if err := g.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = g.cmd.Wait(); close(g.done) }()
	s := &server{Addr: g.framed, cmd: g.cmd, done: g.done}
	if err := s.waitReady(ctx, ready); err != nil {
		s.stop()
		return nil, err
	}
	return g, nil
}

func (g *floodGateway) stop() { (&server{cmd: g.cmd, done: g.done}).stop() }

func (g *floodGateway) counter(name, label string) int64 {
	m, err := scrapeLines("http://" + g.metrics + "/metrics")
	if err != nil {
		return -1
	}
	var sum int64
	for _, line := range m {
		if strings.HasPrefix(line, name) && strings.Contains(line, label) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += int64(v)
		}
	}
	return sum
}

// runFlood runs each scenario against a fresh gateway.
func runFlood(ctx context.Context, cfg floodConfig, which map[string]bool, log zerolog.Logger) ([]floodRow, error) {
	scenarios := []struct {
		key    string
		name   string
		http   bool
		init   bool
		body   string
		frames int
	}{
		{key: "framed", name: "framed, before Initialize (_Keepalive)", body: keepaliveFrame},
		{key: "framed", name: "framed, after Initialize (load_skills_protocol_guide)", init: true, body: guideFrame},
		{key: "http", name: "HTTP POST /rpc (load_skills_protocol_guide)", http: true},
	}
	var rows []floodRow
	for _, sc := range scenarios {
		if !which[sc.key] {
			continue
		}
		g, err := startFloodGateway(ctx, cfg)
		if err != nil {
			return nil, err
		}
		row, err := floodOnce(ctx, cfg, g, sc.name, func(ctx context.Context) (int64, error) {
			if sc.http {
				return floodHTTP(ctx, g.http, cfg.ConnsPerClient)
			}
			return floodFramed(ctx, g.framed, sc.init, sc.body)
		})
		g.stop()
		if err != nil {
			return nil, err
		}
		if sc.http {
			row.Bound = 0 // HTTP answers are bounded by the budget, not a per-connection queue
		}
		log.Info().Str("scenario", sc.name).Int64("peak_growth", row.Peak-row.Before).Msg("flood done")
		rows = append(rows, row)
	}
	return rows, nil
}

// floodOnce floods with cfg.Clients clients for cfg.Duration, sampling the
// gateway's RSS every 50 ms, then lets it settle and samples again.
func floodOnce(ctx context.Context, cfg floodConfig, g *floodGateway, name string, client func(context.Context) (int64, error)) (floodRow, error) {
	row := floodRow{Scenario: name, Bound: int64(cfg.Clients) * int64(cfg.MaxQueued)}
	pid := g.cmd.Process.Pid
	before, err := readMem(pid, "")
	if err != nil {
		return row, err
	}
	row.Before, row.Peak = before.RSS, before.RSS
	fctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, _ := client(fctx)
			mu.Lock()
			row.Sent += n
			mu.Unlock()
		}()
	}
	for fctx.Err() == nil {
		if s, err := readMem(pid, ""); err == nil {
			row.Peak = max(row.Peak, s.RSS)
		}
		sleepCtx(fctx, 50*time.Millisecond)
	}
	wg.Wait()
	sleepCtx(ctx, 3*time.Second) // the gateway's idle-memory release runs every 15 s; give writers time to fail
	after, err := readMem(pid, "")
	if err != nil {
		return row, err
	}
	row.After = after.RSS
	row.SlowReaders = g.counter("skillgate_connections_closed_total", `reason="slow_reader"`)
	return row, nil
}

var (
	keepaliveFrame = string(mustFrame(`{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"k"}`))
	guideFrame     = string(mustFrame(`{"jsonrpc":"2.0","method":"load_skills_protocol_guide","params":{},"id":"g"}`))
	initFrame      = string(mustFrame(`{"jsonrpc":"2.0","method":"Initialize","params":{"protocol_version":"1.0"},"id":"init"}`))
)

func mustFrame(body string) []byte {
	b, err := transport.AppendFrame(nil, []byte(body), transport.MaxFrameBody)
	if err != nil {
		panic(err)
	}
	return b
}

// floodFramed writes frames (each with a fresh id) until ctx ends or the
// gateway stops taking them, reading nothing; it returns the bytes sent.
func floodFramed(ctx context.Context, addr string, initialize bool, frame string) (int64, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	defer stop()
	var sent int64
	if initialize {
		n, err := nc.Write([]byte(initFrame))
		sent += int64(n)
		if err != nil {
			return sent, err
		}
	}
	id := 0
	var batch []byte
	for ctx.Err() == nil {
		batch = batch[:0]
		for range 256 {
			id++
			body := strings.Replace(frame[transport.HeaderLen:len(frame)-1], `"id":"`, `"id":"`+strconv.Itoa(id)+`-`, 1)
			batch, _ = transport.AppendFrame(batch, []byte(body), transport.MaxFrameBody)
		}
		n, err := nc.Write(batch)
		sent += int64(n)
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// floodHTTP opens conns connections and pipelines POST /rpc requests on
// each until ctx ends, reading no answer.
func floodHTTP(ctx context.Context, addr string, conns int) (int64, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"load_skills_protocol_guide","params":{}}`
	req := "POST /rpc HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
	chunk := []byte(strings.Repeat(req, 64))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sent int64
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return
			}
			defer nc.Close()
			stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
			defer stop()
			for ctx.Err() == nil {
				n, err := nc.Write(chunk)
				mu.Lock()
				sent += int64(n)
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return sent, nil
}

func writeFloodTable(w io.Writer, cfg floodConfig, rows []floodRow) {
	fmt.Fprintf(w, "Flood: %d clients per scenario, %s each, reading nothing; --max-queued-bytes %s, --write-timeout %s\n\n",
		cfg.Clients, cfg.Duration, fmtMiB(int64(cfg.MaxQueued)), cfg.WriteTimeout)
	fmt.Fprintln(w, "| scenario | sent | RSS before | RSS peak | peak growth | queue bound (clients × max-queued-bytes) | RSS after | slow_reader closes |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		bound := "n/a (HTTP)"
		if r.Bound > 0 {
			bound = fmtMiB(r.Bound)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %d |\n", r.Scenario, fmtMiB(r.Sent), fmtMiB(r.Before),
			fmtMiB(r.Peak), fmtMiB(r.Peak-r.Before), bound, fmtMiB(r.After), r.SlowReaders)
	}
}

// scrapeLines returns the sample lines of a Prometheus endpoint.
func scrapeLines(url string) ([]string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

func fmtMiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
