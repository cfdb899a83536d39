package sandbox

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is an Observer that keeps what it was told, in order.
type recorder struct {
	mu       sync.Mutex
	order    []string
	logs     strings.Builder
	streams  map[Stream]*strings.Builder
	progress []Progress
}

func (rec *recorder) observer() *Observer {
	note := func(what string) {
		rec.mu.Lock()
		rec.order = append(rec.order, what)
		rec.mu.Unlock()
	}
	return &Observer{
		Admitted: func() { note("admitted") },
		Started:  func(time.Duration) { note("started") },
		Log: func(s Stream, p []byte) {
			rec.mu.Lock()
			rec.logs.Write(p)
			if rec.streams == nil {
				rec.streams = map[Stream]*strings.Builder{}
			}
			if rec.streams[s] == nil {
				rec.streams[s] = &strings.Builder{}
			}
			rec.streams[s].Write(p)
			rec.order = append(rec.order, "log")
			rec.mu.Unlock()
		},
		Progress: func(p Progress) {
			rec.mu.Lock()
			rec.progress = append(rec.progress, p)
			rec.mu.Unlock()
		},
	}
}

// text is what the observer got of stream s; the caller holds rec.mu.
func (rec *recorder) text(s Stream) string {
	if b := rec.streams[s]; b != nil {
		return b.String()
	}
	return ""
}

// The observer hears of admission and start before any output, gets every
// byte the code writes, and its progress reports, the last one always.
func TestObserverSeesTheRunLive(t *testing.T) {
	r := sharedRunner(t)
	rec := &recorder{}
	code := "import runtime\ndef main(args):\n    for i in range(200):\n        print('line', i)\n" +
		"        runtime.progress(i + 1, 200, 'step')\n    runtime.log.info('done')\n    return {}\n"
	res := run(t, r, code, nil, func(j *Job) { j.Observer = rec.observer() })
	requireCompleted(t, res)
	var want strings.Builder
	for i := range 200 {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, want.String(), rec.text(StreamStdout))
	assert.Equal(t, "[info] done\n", rec.text(StreamLog))
	assert.Len(t, rec.logs.String(), want.Len()+len("[info] done\n"))
	require.GreaterOrEqual(t, len(rec.order), 3)
	assert.Equal(t, []string{"admitted", "started"}, rec.order[:2])
	require.NotEmpty(t, rec.progress)
	last := rec.progress[len(rec.progress)-1]
	assert.InDelta(t, 200, last.Done, 0)
	assert.InDelta(t, 200, *last.Total, 0)
	assert.Equal(t, "step", *last.Message)
	assert.LessOrEqual(t, len(rec.progress), 200)
}

// stdout, stderr and runtime.log reach the observer as three streams,
// whatever the code does with sys.stderr; the observer sees them all.
func TestObserverSeparatesStreams(t *testing.T) {
	r := sharedRunner(t)
	rec := &recorder{}
	code := "import sys, io, runtime\ndef main(args):\n    print('out 1')\n    print('err 1', file=sys.stderr)\n" +
		"    runtime.log.info('log 1')\n    sys.stderr = io.StringIO()\n    runtime.log.error('log 2 ' + 'é' * 9000)\n" +
		"    print('out 2', flush=True)\n    sys.__stderr__.write('err 2\\n')\n    return {}\n"
	res := run(t, r, code, nil, func(j *Job) { j.Observer = rec.observer() })
	requireCompleted(t, res)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, "out 1\nout 2\n", rec.text(StreamStdout))
	assert.Equal(t, "err 1\nerr 2\n", rec.text(StreamStderr))
	assert.Equal(t, "[info] log 1\n[error] log 2 "+strings.Repeat("é", 9000)+"\n", rec.text(StreamLog))
	for _, line := range []string{"out 1\n", "err 2\n", "[info] log 1\n"} {
		assert.Contains(t, rec.logs.String(), line)
	}
}

// runtime.progress refuses what is not a number (or a str message) with
// TypeError, failing the run like any exception of the code.
func TestProgressRefusesBadArguments(t *testing.T) {
	r := sharedRunner(t)
	for _, call := range []string{"'half'", "1, 'ten'", "float('nan')", "True", "1, 2, 3"} {
		res := run(t, r, "import runtime\ndef main(args):\n    runtime.progress("+call+")\n", nil)
		require.Equal(t, StatusFailed, res.Status, call)
		assert.Equal(t, "TypeError", res.Error.Type, "%s: %s", call, res.Error.Message)
	}
}

// A run cancelled while it waits in the queue, and one cancelled while its
// sandbox is being started, return at once and leave nothing behind.
func TestCancelWhileQueuedAndStarting(t *testing.T) {
	r := ownRunner(t, func(c *Config) { c.Workers, c.QueueSize = 1, 2 })
	sleep := Job{Code: "import time\n\ndef main(args):\n    time.sleep(60)\n", Timeout: time.Minute}
	// Starting: cancel as soon as the run has a worker, before the
	// sandbox (no warm pool) is up.
	startCtx, cancelStart := context.WithCancel(context.Background())
	defer cancelStart()
	starting := sleep
	starting.Observer = &Observer{Started: func(time.Duration) { cancelStart() }}
	_, err := r.Run(startCtx, starting)
	require.ErrorIs(t, err, context.Canceled)

	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	errs := make(chan error, 2)
	go func() { _, err := r.Run(runCtx, sleep); errs <- err }()
	require.Eventually(t, func() bool { return r.Stats().Running == 1 }, 20*time.Second, time.Millisecond)
	queuedCtx, cancelQueued := context.WithCancel(context.Background())
	admitted := make(chan struct{})
	queued := sleep
	queued.Observer = &Observer{Admitted: func() { close(admitted) }}
	go func() { _, err := r.Run(queuedCtx, queued); errs <- err }()
	<-admitted
	cancelQueued()
	require.ErrorIs(t, <-errs, context.Canceled, "the queued run")
	cancelRun()
	require.ErrorIs(t, <-errs, context.Canceled, "the running run")
	assertHealthyAndClean(t, r)
}
