package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/session"
)

// eventPrinter writes run_event notifications to stderr, one JSON line
// each, and remembers the id of the run they belong to (for Ctrl-C).
type eventPrinter struct {
	w     io.Writer
	mu    sync.Mutex
	runID string
}

func (p *eventPrinter) config() session.Config {
	cfg := session.ClientConfig()
	cfg.OnNotification = func(_ *session.Conn, method string, params []byte) {
		if method != dispatch.MethodRunEvent {
			return
		}
		var ev struct {
			RunID string `json:"run_id"`
		}
		_ = json.Unmarshal(params, &ev)
		p.mu.Lock()
		p.runID = ev.RunID
		fmt.Fprintf(p.w, "%s\n", params)
		p.mu.Unlock()
	}
	return cfg
}

func (p *eventPrinter) run() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runID
}

// runStreamed calls an execution method with stream: true, printing the
// run's events as they come. Ctrl-C cancels the run and prints its final
// run object.
func runStreamed(cmd *cobra.Command, o *callOptions, method string, params json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil {
		return fmt.Errorf("PARAMS_JSON: %w", err)
	}
	obj["stream"] = json.RawMessage("true")
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	p := &eventPrinter{w: cmd.ErrOrStderr()}
	conn, err := o.connect(cmd, ctx, p.config(), true)
	if err != nil {
		return err
	}
	defer conn.Close()
	return followUntilInterrupt(cmd, ctx, conn, p, method, obj)
}

// followUntilInterrupt makes a call whose run streams events; on Ctrl-C
// it cancels the run and waits for the call's answer, which then holds the
// cancelled run.
func followUntilInterrupt(cmd *cobra.Command, ctx context.Context, conn *session.Conn, p *eventPrinter, method string, params any) error {
	sig, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	type answer struct {
		res json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := conn.Call(ctx, method, params)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return finish(cmd, method, a.res, a.err)
	case <-sig.Done():
	}
	if id := p.run(); id != "" && ctx.Err() == nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "interrupted: cancelling %s\n", id)
		if _, err := conn.Call(ctx, dispatch.MethodCancelRun, map[string]string{"run_id": id}); err != nil {
			return printCallError(cmd, dispatch.MethodCancelRun, err)
		}
	}
	a := <-done
	return finish(cmd, method, a.res, a.err)
}

func finish(cmd *cobra.Command, method string, res json.RawMessage, err error) error {
	if err != nil {
		return printCallError(cmd, method, err)
	}
	return printResult(cmd, res)
}

func newRunsCommand() *cobra.Command {
	o := &callOptions{}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, inspect, follow and cancel runs over the framed transport",
		Long: "Runs are those of the identity of --token. Results print as JSON on stdout; watch prints the run's\n" +
			"events on stderr as they come. An error response exits 1, a connection failure 2.",
	}
	o.addFlags(cmd)
	var status string
	var limit int
	list := &cobra.Command{
		Use: "list", Short: "List your runs, newest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			params := map[string]any{"limit": limit}
			if status != "" {
				params["status"] = status
			}
			return o.simpleCall(cmd, dispatch.MethodListRuns, params)
		},
	}
	list.Flags().StringVar(&status, "status", "", "running or finished (default: both)")
	list.Flags().IntVar(&limit, "limit", 20, "runs per page (1-100)")
	var wait time.Duration
	get := &cobra.Command{
		Use: "get RUN_ID", Short: "Print a run: its status and progress, or its run object once finished", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.simpleCall(cmd, dispatch.MethodGetRun, map[string]any{"run_id": args[0], "wait_ms": wait.Milliseconds()})
		},
	}
	get.Flags().DurationVar(&wait, "wait", 0, "wait up to this long (at most 1m) for the run to finish")
	var after uint64
	watch := &cobra.Command{
		Use: "watch RUN_ID", Short: "Print a run's events from --after on as they come, then its run object; Ctrl-C cancels the run",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.watch(cmd, args[0], after)
		},
	}
	watch.Flags().Uint64Var(&after, "after", 0, "print events with a seq above this one")
	cancel := &cobra.Command{
		Use: "cancel RUN_ID", Short: "Cancel a run and print its final status", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.simpleCall(cmd, dispatch.MethodCancelRun, map[string]any{"run_id": args[0]})
		},
	}
	cmd.AddCommand(list, get, watch, cancel)
	return cmd
}

func (o *callOptions) simpleCall(cmd *cobra.Command, method string, params any) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	conn, err := o.connect(cmd, ctx, session.ClientConfig(), true)
	if err != nil {
		return err
	}
	defer conn.Close()
	res, err := conn.Call(ctx, method, params)
	return finish(cmd, method, res, err)
}

func (o *callOptions) watch(cmd *cobra.Command, runID string, after uint64) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	p := &eventPrinter{w: cmd.ErrOrStderr(), runID: runID}
	conn, err := o.connect(cmd, ctx, p.config(), true)
	if err != nil {
		return err
	}
	defer conn.Close()
	return followUntilInterrupt(cmd, ctx, conn, p, dispatch.MethodWatchRun, map[string]any{"run_id": runID, "after_seq": after})
}
