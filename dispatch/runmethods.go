package dispatch

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/transport"
)

// The run methods.
const (
	MethodGetRun    = "get_run"
	MethodWatchRun  = "watch_run"
	MethodCancelRun = "cancel_run"
	MethodListRuns  = "list_runs"
)

func runNotFound(err error) *transport.Error {
	return &transport.Error{Code: transport.CodeInvalidParams, Message: "Run not found.",
		StringCode: StringRunNotFound, Details: err.Error() + "; runs are kept for the gateway's run retention after they finish"}
}

// runMethods are the run methods of the execution group.
func (d *Dispatcher) runMethods() []groupMethod {
	return []groupMethod{
		{name: MethodGetRun, aliases: []string{"GetRun"}, fn: d.getRun},
		{name: MethodWatchRun, aliases: []string{"WatchRun"}, fn: d.watchRun},
		{name: MethodCancelRun, aliases: []string{"CancelRun"}, fn: d.cancelRun},
		{name: MethodListRuns, aliases: []string{"ListRuns"}, fn: d.listRuns},
	}
}

// lookupRun reads run_id and finds the caller's run.
func (d *Dispatcher) lookupRun(call *Call, p *params) (*runs.Run, error) {
	id := p.RequiredString("run_id")
	if err := p.Err(); err != nil {
		return nil, err
	}
	return d.opts.Runs.Get(d.runOwner(call, id), id)
}

func (d *Dispatcher) getRun(ctx context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	wait := p.Int("wait_ms", 0, 0, maxWaitMS)
	run, err := d.lookupRun(call, &p)
	if err != nil {
		return nil, err
	}
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, time.Duration(wait)*time.Millisecond)
		err := run.Wait(wctx)
		cancel()
		if err != nil && ctx.Err() != nil {
			return nil, err
		}
	}
	return run.Object(), nil
}

func (d *Dispatcher) watchRun(ctx context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	after := p.Int("after_seq", 0, 0, math.MaxInt64)
	run, err := d.lookupRun(call, &p)
	if err != nil {
		return nil, err
	}
	if !call.CanNotify() {
		return nil, paramErr("run_id", "can only be watched with run_event notifications: "+noStreamReason(call)+
			"; without a stream, poll get_run with wait_ms")
	}
	requestID := run.Record().RequestID
	// A watch may last as long as the run: it ends once a reload revokes
	// the credential it was opened with, not only at the next call.
	ctx, stop := auth.UntilRevoked(ctx, d.authn, call.Identity)
	defer stop()
	// No compaction: watch_run is how a client gets every retained
	// event, such as those a streamed call merged or dropped. A watcher
	// that reads slowly waits; the run goes on regardless.
	err = run.Follow(ctx, uint64(after), func(ev runs.Event) error {
		return call.Notify(ctx, MethodRunEvent, &RunEvent{RunID: run.ID(), RequestID: requestID, Event: ev})
	})
	if rerr := auth.Revoked(ctx); err != nil && rerr != nil {
		return nil, rerr
	}
	if err != nil {
		return nil, err
	}
	return run.Object(), nil
}

func (d *Dispatcher) cancelRun(ctx context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	run, err := d.lookupRun(call, &p)
	if err != nil {
		return nil, err
	}
	run.Cancel()
	wctx, cancel := context.WithTimeout(ctx, cancelWait)
	_ = run.Wait(wctx)
	cancel()
	return map[string]string{"run_id": run.ID(), "status": run.Record().Status}, nil
}

func (d *Dispatcher) listRuns(_ context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	status := p.Enum("status", "", runs.StatusRunning, "finished")
	limit := p.Int("limit", defaultListLimit, 1, maxListLimit)
	cursor := p.String("cursor")
	all := p.Bool("all_identities")
	if err := p.Err(); err != nil {
		return nil, err
	}
	owner, err := listOwner(call, all)
	if err != nil {
		return nil, err
	}
	page, next, err := d.opts.Runs.List(owner, status, int(limit), cursor)
	if errors.Is(err, runs.ErrBadCursor) {
		return nil, paramErr("cursor", "is not a cursor list_runs returned; start again without one")
	}
	if err != nil {
		return nil, err
	}
	if page == nil {
		page = []runs.Summary{}
	}
	var nextCursor any // null on the last page
	if next != "" {
		nextCursor = next
	}
	return map[string]any{"runs": page, "next_cursor": nextCursor}, nil
}
