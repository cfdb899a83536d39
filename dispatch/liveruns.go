package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/blob"
	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/runs"
	"github.com/skillgate/skillgate/sandbox"
	"github.com/skillgate/skillgate/transport"
)

// MethodRunEvent is the notification that carries a run's events.
const MethodRunEvent = "run_event"

// runMode says how an execution call runs.
type runMode uint8

const (
	modePlain  runMode = iota // the response when the run ends
	modeStream                // run_event notifications, then the response
	modeAsync                 // the response at once; the run goes on
)

// readRunMode reads the stream and async flags; both at once is an error.
func readRunMode(p *params) runMode {
	stream, async := p.Bool("stream"), p.Bool("async")
	switch {
	case stream && async:
		p.fail("async", "cannot be combined with stream: start the run with async, then follow it with watch_run")
	case stream:
		return modeStream
	case async:
		return modeAsync
	}
	return modePlain
}

// noStreamReason explains why a call cannot receive run_event, in the
// words of its front door.
func noStreamReason(call *Call) string { return call.caller.NoStream() }

// errCanceledRun is the run error of a run stopped by cancel_run or by
// its caller's disconnect.
var errCanceledRun = &sandbox.RunError{Type: runerror.Canceled, Message: "the run was cancelled; every process of it was killed"}

// startRun registers a run whose context ends with ctx or cancel_run.
func (d *Dispatcher) startRun(ctx context.Context, call *Call, req *runRequest, id, requestID string) (*runs.Run, context.Context) {
	runCtx, cancel := context.WithCancelCause(ctx)
	return d.opts.Runs.Start(id, blobOwner(call), req.what, requestID, cancel), runCtx
}

// observe feeds a run's record from the sandbox while it runs.
func observe(run *runs.Run, admitted func()) *sandbox.Observer {
	return &sandbox.Observer{
		Admitted: admitted,
		Started:  run.Started,
		Log:      func(s sandbox.Stream, p []byte) { run.Log(s.String(), p) },
		Progress: func(p sandbox.Progress) {
			if raw, err := json.Marshal(p); err == nil {
				run.Progress(raw)
			}
		},
	}
}

// streamRun runs the job while a follower sends its events to the caller;
// the response goes out only after the finished event.
func (d *Dispatcher) streamRun(ctx, runCtx context.Context, call *Call, run *runs.Run, req *runRequest, job sandbox.Job) (any, error) {
	followed := make(chan error, 1)
	requestID := call.RequestID()
	fctx, stop := context.WithCancel(ctx)
	drained := false
	defer func() {
		// On a panic the run may never finish: the follower must not
		// outlive the call, whose Call is recycled.
		stop()
		if !drained {
			<-followed
		}
	}()
	go func() {
		s := &eventSender{call: call, runID: run.ID(), requestID: requestID}
		followed <- run.FollowCompacting(fctx, 0, s.pressed, func(ev runs.Event) error { return s.send(fctx, ev) })
	}()
	out, err := d.completeRun(runCtx, call, run, req, job, nil)
	ferr := <-followed
	drained = true
	if ferr != nil && err == nil {
		// The caller is gone or the stream broke: the response cannot
		// follow the events it would come after.
		return nil, ferr
	}
	return out, err
}

// eventSender sends a streamed run's events to its caller and tells the
// follower when the caller is behind: the last notification found the
// connection's queue past its share and had to wait, or the queue is past
// it now. The follower then compacts what it has still to send. Used by
// the follower's goroutine only.
type eventSender struct {
	call             *Call
	runID, requestID string
	behind           bool // the last send had to wait for room
}

func (s *eventSender) pressed() bool { return s.behind || s.call.Backlogged() }

func (s *eventSender) send(ctx context.Context, ev runs.Event) error {
	params := &RunEvent{RunID: s.runID, RequestID: s.requestID, Event: ev}
	err := s.call.TryNotify(ctx, MethodRunEvent, params)
	s.behind = errors.Is(err, ErrBackpressure)
	if s.behind {
		err = s.call.Notify(ctx, MethodRunEvent, params)
	}
	return err
}

// startAsync starts the run in the background and answers once the
// sandbox queue has taken it; a full queue refuses the call at once.
// release frees the caller's concurrent-run slot when the run ends.
func (d *Dispatcher) startAsync(ctx context.Context, call *Call, req *runRequest, job sandbox.Job, release func()) (any, error) {
	// The run outlives the call: it must not hold the recycled Call, nor
	// end with the caller's connection.
	bg := &Call{Method: call.Method, Front: call.Front, caller: detach(call.caller), log: call.log, Identity: call.Identity}
	run, runCtx := d.startRun(context.WithoutCancel(ctx), bg, req, job.RunID, "")
	admitted := make(chan struct{})
	var once sync.Once
	ended := make(chan error, 1)
	go func() {
		defer release()
		defer d.recoverRun(bg, run, req)
		_, err := d.completeRun(runCtx, bg, run, req, job, func() { once.Do(func() { close(admitted) }) })
		ended <- err
	}()
	select {
	case <-admitted:
	case err := <-ended:
		if errors.Is(err, sandbox.ErrOverloaded) {
			d.opts.Runs.Discard(run)
			return nil, err
		}
	}
	return map[string]string{"run_id": run.ID(), "status": runs.StatusRunning}, nil
}

// recoverRun keeps a panic in a background run from taking the gateway
// down, as the dispatcher does for calls, and finishes the run.
func (d *Dispatcher) recoverRun(call *Call, run *runs.Run, req *runRequest) {
	p := recover()
	if p == nil {
		return
	}
	d.opts.Metrics.Panics.Inc()
	call.Log(zerolog.ErrorLevel).Str("run_id", run.ID()).Interface("panic", p).Bytes("stack", debug.Stack()).
		Msg("background run panicked")
	_, _ = d.runFailed(context.Background(), call, run, req, errors.New("internal error"))
}

// runFailed finishes a run that produced no run object of the sandbox's.
// A run stopped by cancel_run answers its run object (failed,
// CANCELLED); a full sandbox queue forgets the run; other errors finish
// the record and stay the call's error.
func (d *Dispatcher) runFailed(ctx context.Context, call *Call, run *runs.Run, req *runRequest, err error) (*RunResult, error) {
	e := &sandbox.RunError{Type: runerror.Sandbox, Message: err.Error()}
	switch {
	case errors.Is(err, sandbox.ErrOverloaded):
		return nil, err // startAsync discards the run; a plain call just fails
	case errors.Is(context.Cause(ctx), runs.ErrCanceled):
		e, err = errCanceledRun, nil
	case errors.Is(err, context.Canceled):
		e = errCanceledRun
	case errors.Is(err, sandbox.ErrClosed):
		e = &sandbox.RunError{Type: runerror.Interrupted, Message: "the gateway shut down while the run was in progress"}
	case errors.Is(err, blob.ErrStorageFull):
		e = &sandbox.RunError{Type: runerror.StorageFull, Message: err.Error()}
	}
	out := &RunResult{Status: sandbox.StatusFailed, RunID: run.ID(), OutputBlobs: []string{},
		Error: &RunErrorInfo{Type: e.Type, Message: e.Message}, LogsPreview: logsTail(run.FullLogs()),
		DurationMS: time.Since(run.Record().StartedAt).Milliseconds()}
	out.Summary, out.Retry = failureSummary(req.label, e, out.DurationMS)
	if e.Type == runerror.Interrupted {
		out.Retry = runRetry()
	}
	d.storeLogs(context.WithoutCancel(ctx), call, run, out)
	d.finishRun(run, req, out)
	if err == nil || e == errCanceledRun {
		// A run its caller abandoned (a disconnect, MCP's
		// notifications/cancelled) is a cancelled run as much as one
		// stopped by cancel_run, though the call itself fails.
		d.recordRun(req.kind, out, time.Duration(out.DurationMS)*time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// logsTail is the end of a run's logs that fits a logs_preview, for runs
// that ended before the sandbox could report its own preview.
func logsTail(logs []byte) string {
	if len(logs) > sandbox.MaxLogsPreview {
		logs = logs[len(logs)-sandbox.MaxLogsPreview:]
	}
	return strings.ToValidUTF8(string(logs), "")
}

// finishRun records out as the run's result; it names the input blobs the
// run was given, so that whoever reads the run later (the run console
// among them) sees what it worked on.
func (d *Dispatcher) finishRun(run *runs.Run, req *runRequest, out *RunResult) {
	if len(req.blobs) > 0 {
		out.InputBlobs = req.blobs
	}
	raw, err := json.Marshal(out)
	if err != nil {
		raw = []byte(`{}`) // RunResult always encodes
	}
	run.Finish(out.Status, raw)
}

// storeLogs keeps the full logs as a text/plain blob of the caller when
// the preview does not hold them all: they count against the caller's
// blob quota, as the copy of them in the run's record does.
func (d *Dispatcher) storeLogs(ctx context.Context, call *Call, run *runs.Run, out *RunResult) {
	logs := run.FullLogs()
	if len(logs) <= len(out.LogsPreview) {
		return
	}
	id := d.opts.Blobs.NewID()
	if _, err := d.opts.Blobs.Put(ctx, id, blobPut(call, "text/plain"), bytes.NewReader(logs)); err != nil {
		call.Log(zerolog.WarnLevel).Str("run_id", run.ID()).AnErr("cause", err).
			Msg("cannot store the run's full logs; its record keeps only their preview")
		// Not counted against the identity's blob quota, so not kept in
		// the run's record either.
		run.DropLogs()
		return
	}
	out.LogsBlob = id
}

// RunEvent is the params of a run_event notification as a Go value: the
// run, the request that started it, and the event as the run's record
// keeps it. A front door encodes it at its wire (AppendJSON, the object of
// docs/live-runs.md) or reads its members (MCP).
type RunEvent struct {
	RunID     string
	RequestID string // "" when the run was not started by a request with an id
	runs.Event
}

// AppendJSON appends the notification's params object: run_id,
// request_id, seq and type, then the event's own members. It implements
// transport.Appender.
func (e *RunEvent) AppendJSON(b []byte) []byte {
	b = append(b, `{"run_id":`...)
	b = transport.AppendString(b, e.RunID)
	if e.RequestID != "" {
		b = append(b, `,"request_id":`...)
		b = transport.AppendString(b, e.RequestID)
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"type":`...)
	b = transport.AppendString(b, e.Type)
	if fields := bytes.TrimSpace(e.Data); len(fields) > 2 {
		b = append(b, ',')
		b = append(b, fields[1:len(fields)-1]...)
	}
	return append(b, '}')
}

// Bounds of the run methods' parameters.
const (
	maxWaitMS        = 60_000
	defaultListLimit = 20
	maxListLimit     = 100
	// cancelWait bounds how long cancel_run waits for the run to end
	// before answering its status: the sandbox kills a run within
	// moments, this is only a safety net.
	cancelWait = 5 * time.Second
)
