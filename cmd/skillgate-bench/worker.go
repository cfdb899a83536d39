package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// Worker protocol: the parent starts `skillgate-bench idle-hold` with the
// target flags, --conns and --offset. The worker opens and initializes its
// connections, then prints its holdStatus as one JSON line for every line
// it reads on stdin. When stdin closes it closes its connections and exits.

// workerHolder is a worker process holding connections.
type workerHolder struct {
	cmd   *exec.Cmd
	mu    sync.Mutex // guards the pipes
	stdin io.WriteCloser
	out   *bufio.Scanner
}

func startWorker(ctx context.Context, cfg *idleConfig, n, offset int) (*workerHolder, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := append([]string{"idle-hold", "--conns", strconv.Itoa(n), "--offset", strconv.Itoa(offset),
		"--dial-concurrency", strconv.Itoa(cfg.DialConcurrency), "--no-init=" + strconv.FormatBool(cfg.NoInit)}, cfg.WorkerArgs...)
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 10 * time.Second
	w := &workerHolder{cmd: cmd}
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w.out = bufio.NewScanner(stdout)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if _, err := w.status(); err != nil {
		_ = w.close()
		return nil, fmt.Errorf("worker: %w", err)
	}
	return w, nil
}

// status asks the worker for its status; the first call waits until its
// connections are open.
func (w *workerHolder) status() (holdStatus, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var st holdStatus
	if _, err := io.WriteString(w.stdin, "status\n"); err != nil {
		return st, err
	}
	if !w.out.Scan() {
		return st, fmt.Errorf("worker ended: %v", w.out.Err())
	}
	err := json.Unmarshal(w.out.Bytes(), &st)
	return st, err
}

func (w *workerHolder) close() error {
	_ = w.stdin.Close()
	return w.cmd.Wait()
}

// runWorker is the idle-hold subcommand.
func runWorker(ctx context.Context, t target, n, offset, dialConc int, noInit bool, in io.Reader, out io.Writer) error {
	if _, err := raiseNofile(); err != nil {
		return err
	}
	set, failed := holdConns(ctx, t, n, offset, noInit, dialConc)
	defer set.close()
	sc := bufio.NewScanner(in)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		if err := enc.Encode(set.status(failed)); err != nil {
			return err
		}
	}
	return sc.Err()
}
