package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// profileResult holds the gateway profiles taken under load.
type profileResult struct {
	Point          loadPoint
	Rate           float64
	CPUFile        string
	AllocsFile     string
	CPUTop, AllTop string
	Err            error
}

// takeProfiles runs the point once more on the gateway while its CPU and
// allocation profiles are taken over the measured window, and keeps the
// top of both.
func takeProfiles(ctx context.Context, plan comparePlan, pt loadPoint, gw *server, bin, dir string, log zerolog.Logger) *profileResult {
	pr := &profileResult{Point: pt}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		pr.Err = err
		return pr
	}
	secs := max(int((plan.Duration+plan.Warmup)/time.Second), 2)
	slug := fmt.Sprintf("gateway-%s-c%d", strings.TrimLeft(pt.Method, "_"), pt.Conns)
	pr.CPUFile, pr.AllocsFile = filepath.Join(dir, slug+"-cpu.pprof"), filepath.Join(dir, slug+"-allocs.pprof")
	base := "http://" + gw.MetricsAddr + "/debug/pprof/"
	var wg sync.WaitGroup
	var cpuErr, allocErr error
	wg.Go(func() { cpuErr = fetch(ctx, fmt.Sprintf("%sprofile?seconds=%d", base, secs), pr.CPUFile) })
	wg.Go(func() { allocErr = fetch(ctx, fmt.Sprintf("%sallocs?seconds=%d", base, secs), pr.AllocsFile) })
	cfg := loadConfig{Target: target{Addr: gw.Addr}, Conns: pt.Conns, Depth: plan.Depth, Method: pt.Method,
		Params: []byte(pt.Params), Size: pt.Size, Duration: time.Duration(secs)*time.Second - 500*time.Millisecond, Warmup: 300 * time.Millisecond}
	res, err := runLoad(ctx, cfg, log)
	wg.Wait()
	pr.Rate = rateOf(res)
	if pr.Err = firstErr(err, cpuErr, allocErr); pr.Err != nil {
		return pr
	}
	pr.CPUTop = pprofTop(ctx, bin, pr.CPUFile, "")
	pr.AllTop = pprofTop(ctx, bin, pr.AllocsFile, "-sample_index=alloc_space")
	log.Info().Str("dir", dir).Msg("profiles written")
	return pr
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// pprofTop returns the first lines of `go tool pprof -top`.
func pprofTop(ctx context.Context, bin, file, extra string) string {
	args := []string{"tool", "pprof", "-top", "-nodecount=25"}
	if extra != "" {
		args = append(args, extra)
	}
	out, err := exec.CommandContext(ctx, "go", append(args, bin, file)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("go tool pprof: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func (pr *profileResult) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "### Gateway profiles under `%s`\n\n", pr.Point.label())
	if pr.Err != nil {
		fmt.Fprintf(b, "Profiling failed: %v\n\n", pr.Err)
		return
	}
	fmt.Fprintf(b, "%s during the profile; files `%s`, `%s`.\n\n", fmtRate(pr.Rate)+" req/s", pr.CPUFile, pr.AllocsFile)
	fmt.Fprintf(b, "CPU:\n\n```\n%s\n```\n\nAllocations (alloc_space):\n\n```\n%s\n```\n\n", pr.CPUTop, pr.AllTop)
}

// heapProfile is the gateway's heap while idle connections were held.
type heapProfile struct {
	Label, File, Top string
	Err              error
}

func takeHeapProfile(ctx context.Context, srv *server, bin, dir string, ip idlePoint) *heapProfile {
	tr := map[bool]string{false: "tcp", true: "tls"}[ip.TLS]
	hp := &heapProfile{
		Label: fmt.Sprintf("%d idle %s connections", ip.Conns, strings.ToUpper(tr)),
		File:  filepath.Join(dir, fmt.Sprintf("gateway-idle-%s-heap.pprof", tr)),
	}
	if hp.Err = os.MkdirAll(dir, 0o755); hp.Err != nil {
		return hp
	}
	if hp.Err = fetch(ctx, "http://"+srv.MetricsAddr+"/debug/pprof/heap?gc=1", hp.File); hp.Err != nil {
		return hp
	}
	hp.Top = pprofTop(ctx, bin, hp.File, "-sample_index=inuse_space")
	return hp
}

func (hp *heapProfile) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "### Gateway heap with %s\n\n", hp.Label)
	if hp.Err != nil {
		fmt.Fprintf(b, "Profiling failed: %v\n\n", hp.Err)
		return
	}
	fmt.Fprintf(b, "File `%s` (inuse_space):\n\n```\n%s\n```\n\n", hp.File, hp.Top)
}
