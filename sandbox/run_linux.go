package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// end says what ended a run first.
type end int

const (
	endResult   end = iota // the runtime sent its result frame
	endDied                // the sandbox ended without a result
	endTimeout             // wall clock
	endLogs                // the logs past the hard cap
	endCanceled            // the caller's context
	endClosed              // the Runner is closing
)

// outcome is everything known once the sandbox is dead.
type outcome struct {
	end      end
	frame    *resultFrame
	exit     *wire.Status // Python's exit, when pid 1 saw it
	read     bool         // the result reader has answered (frame may be nil)
	duration time.Duration
}

// run delivers the job, waits for the first ending event, kills the
// sandbox and turns what happened into a Result. When it returns, pid 1 has
// been killed (the kernel kills the rest of its pid namespace); reaping and
// removal are left to teardown.
func (sb *sandbox) run(ctx context.Context, closing <-chan struct{}, p *plan, cfg *Config) (*Result, error) {
	if err := writeJobFiles(sb.jobDir, p); err != nil {
		return failed(runerror.Sandbox, "prepare the run: "+err.Error()), nil
	}
	if p.cpus != cfg.CPUs {
		// The pre-started sandbox's cgroup has the gateway's share.
		if err := sb.cg.SetCPUs(p.cpus); err != nil {
			return failed(runerror.Sandbox, "limit the run's CPU share: "+err.Error()), nil
		}
	}
	msg, err := json.Marshal(p.msg)
	if err != nil {
		return failed(runerror.Sandbox, "encode the job: "+err.Error()), nil
	}
	stopEgress := sb.serveEgress(p.job.Egress)
	sb.logs.observe(p.job.Observer.logSink())
	frames := sb.readResult(p.job.Observer)
	start := time.Now()
	go func() {
		_, _ = sb.jobW.Write(msg) // fails only when the sandbox died
		sb.closeJob()
	}()
	o := sb.wait(ctx, closing, frames, p.timeout)
	o.duration = time.Since(start)
	sb.kill()
	stopEgress()
	switch o.end {
	case endCanceled:
		return nil, ctx.Err()
	case endClosed:
		return nil, ErrClosed
	case endDied:
		if !o.read {
			// Python's exit can be reported before its result is parsed:
			// a frame written before the exit is read at once, else the
			// reader sees EOF when the killed processes are gone.
			o.frame, o.read = <-frames, true
		}
		if o.frame != nil {
			o.end = endResult
		}
	}
	if o.end == endResult {
		// The runtime closed stdout and stderr before answering: the log
		// pipe ends as soon as the killed processes are gone.
		<-sb.logDone
	} else {
		sb.settle(&o)
	}
	res := sb.classify(o, p, cfg)
	res.Logs = sb.logs.Preview()
	res.Duration = o.duration
	return res, nil
}

// readResult reads the runtime's one result frame in the background; it
// delivers nil on EOF or garbage.
func (sb *sandbox) readResult(o *Observer) <-chan *resultFrame {
	frames := make(chan *resultFrame, 1)
	go func() {
		f := new(resultFrame)
		sink := liveSink{progress: o.progress, log: func(p []byte) { _, _ = sb.logs.write(StreamLog, p) }}
		if readResultFrame(sb.result, f, sink) != nil {
			f = nil
		}
		frames <- f
	}()
	return frames
}

// settle waits for the killed sandbox to be gone and collects what it
// left: the logs and Python's exit.
func (sb *sandbox) settle(o *outcome) {
	<-sb.exited
	<-sb.logDone
	for ev := range sb.status.events {
		if ev.Ev == wire.EvExit {
			o.exit = &ev
		}
	}
}

func (sb *sandbox) wait(ctx context.Context, closing <-chan struct{}, frames <-chan *resultFrame, timeout time.Duration) outcome {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var o outcome
	for {
		select {
		case f := <-frames:
			o.read, o.frame = true, f
			if f != nil {
				o.end = endResult
				return o
			}
			// EOF without a result: Python is gone (or closed the pipe);
			// wait for pid 1's report of how it ended.
			frames = nil
		case ev, ok := <-sb.status.events:
			if !ok {
				o.end = endDied
				return o
			}
			if ev.Ev == wire.EvExit {
				o.end, o.exit = endDied, &ev
				return o
			}
		case <-sb.exited:
			o.end = endDied
			return o
		case <-timer.C:
			o.end = endTimeout
			return o
		case <-sb.logs.overflow:
			o.end = endLogs
			return o
		case <-ctx.Done():
			o.end = endCanceled
			return o
		case <-closing:
			o.end = endClosed
			return o
		}
	}
}

// classify classifies a finished run. A complete result frame wins unless
// a limit ended the run first; then the memory counter, then how Python
// exited.
func (sb *sandbox) classify(o outcome, p *plan, cfg *Config) *Result {
	switch o.end {
	case endLogs:
		return failed(runerror.OutputTooLarge, fmt.Sprintf(
			"the run wrote more than %d bytes to stdout/stderr and was killed", cfg.LogsHardCap))
	case endTimeout:
		return failed(runerror.Timeout, fmt.Sprintf("the run exceeded its timeout of %s and was killed", p.timeout))
	}
	if o.frame != nil {
		return sb.fromFrame(o.frame, p, cfg)
	}
	if sb.cg.OOMKills() > 0 {
		return failed(runerror.MemoryLimit, fmt.Sprintf(
			"the run exceeded its memory limit of %d MiB and was killed", cfg.MemoryBytes>>20))
	}
	if ev := o.exit; ev != nil {
		return fromExit(ev, p.msg.CPUSeconds)
	}
	return failed(runerror.Sandbox, "the sandbox ended unexpectedly"+sb.rawStatus())
}

func (sb *sandbox) rawStatus() string {
	if raw := sb.status.raw.String(); raw != "" {
		return ": " + raw
	}
	return ""
}

// fromExit explains a Python process that ended without a result.
func fromExit(ev *wire.Status, cpuSeconds int64) *Result {
	sig := syscall.Signal(ev.Signal)
	switch {
	case sig == syscall.SIGXCPU || sig == syscall.SIGKILL && ev.CPUMilli >= cpuSeconds*1000:
		return failed(runerror.Timeout, fmt.Sprintf("the run exceeded its CPU time limit of %ds and was killed", cpuSeconds))
	case ev.Signal != 0:
		return failed("SystemExit", fmt.Sprintf("the process was killed by signal %d (%s) before returning a result", ev.Signal, sig))
	default:
		return failed("SystemExit", fmt.Sprintf("the process exited with status %d before returning a result", ev.Code))
	}
}

func (sb *sandbox) fromFrame(f *resultFrame, p *plan, cfg *Config) *Result {
	if err := f.check(len(p.msg.Outputs)); err != nil {
		if f.prepared {
			// The code may have written it: the run's fault, not the sandbox's.
			return failed("ResultError", "the run's result could not be read (did the code write to the runtime's descriptors?): "+err.Error())
		}
		return failed(runerror.Sandbox, "invalid result from the sandbox runtime: "+err.Error())
	}
	if !f.OK {
		return failed(f.errorType(), f.Message)
	}
	blobs, err := collectOutputs(sb.ws, f.Blobs, p.msg.Outputs, cfg.MaxOutputBlobBytes, cfg.MaxRunOutputBytes, p.job.Outputs)
	var re *RunError
	switch {
	case errors.As(err, &re):
		return failed(re.Type, re.Message)
	case err != nil:
		return failed("BlobError", err.Error())
	}
	return &Result{Status: StatusCompleted, Output: json.RawMessage(f.Output), OutputBlobs: blobs}
}

// serveEgress serves the run's egress until the returned stop is called;
// stop closes the listener and waits until every connection is closed.
func (sb *sandbox) serveEgress(e Egress) (stop func()) {
	if e == nil || sb.egressL == nil {
		return func() {}
	}
	done := make(chan struct{})
	note := func(line string) { _, _ = sb.logs.write(StreamLog, []byte(line)) }
	go func() {
		defer close(done)
		e.Serve(sb.egressL, note)
	}()
	return func() {
		_ = sb.egressL.Close()
		<-done
	}
}
