package session

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// The queue of these tests holds two messages of 16 KiB; notifications may
// fill half of it.
const (
	nbQueue = 32 << 10
	nbShare = 16 << 10
)

// tickParams returns params that make a "tick" notification exactly size
// bytes on the wire.
func tickParams(size int) map[string]string {
	empty, _ := transport.MarshalObject(map[string]string{"pad": ""})
	base := len(transport.AppendNotification(nil, "tick", empty)) + transport.FrameOverhead
	return map[string]string{"pad": strings.Repeat("x", size-base)}
}

// notifyReport is what sizedNotifier answers: one entry per notification,
// the error text ("" when queued) and Backlogged right after it.
type notifyReport struct {
	Errs       []string
	Backlogged []bool
}

// sizedNotifier sends notifications of the sizes its "Send" request names,
// with TryNotify, or with Notify when "wait" is set (bounded by
// "timeout_ms" when given).
func sizedNotifier(ctx context.Context, req *Request) (any, error) {
	var p struct {
		Sizes     []int
		Wait      bool
		TimeoutMS int `json:"timeout_ms"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, err
	}
	if p.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(p.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	var r notifyReport
	for _, size := range p.Sizes {
		var err error
		if p.Wait {
			err = req.Conn.Notify(ctx, "tick", tickParams(size))
		} else {
			err = req.Conn.TryNotify("tick", tickParams(size))
		}
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		r.Errs = append(r.Errs, msg)
		r.Backlogged = append(r.Backlogged, req.Conn.Backlogged())
	}
	return r, nil
}

// notifyBubble serves sizedNotifier on a net.Pipe inside the caller's
// synctest bubble. Nothing is read until the test reads: every frame the
// gateway sends stays queued (the first one being written) meanwhile.
func notifyBubble(t *testing.T, budget *Budget) (*peer, *metrics.Metrics) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.MaxMessageSize, cfg.MaxQueuedBytes = 16<<10, nbQueue
	cfg.KeepaliveInterval = time.Hour // no probes among the frames
	cfg.Budget = budget
	cfg.Metrics = metrics.New("test")
	srv, err := NewServer(cfg, HandlerFunc(sizedNotifier))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	a, b := net.Pipe()
	srv.ServeConn(b, "pipe")
	t.Cleanup(func() { _ = a.Close() })
	return &peer{t: t, nc: a, fr: transport.NewReader(a, 1<<20), bubbled: true}, cfg.Metrics
}

// readReport reads n ticks of the given sizes and then the report.
func readReport(t *testing.T, p *peer, id string, sizes ...int) notifyReport {
	t.Helper()
	for _, size := range sizes {
		m := p.recv()
		require.Equal(t, "tick", m.Method, "%+v", m)
		var params map[string]string
		require.NoError(t, json.Unmarshal(m.Params, &params))
		assert.Equal(t, tickParams(size)["pad"], params["pad"], "a tick of another size")
	}
	m := p.recv()
	require.NotNil(t, m.ID, "%+v", m)
	require.Equal(t, id, *m.ID)
	require.Nil(t, m.Error)
	var r notifyReport
	require.NoError(t, json.Unmarshal(m.Result, &r))
	return r
}

// TryNotify queues a notification that brings the queue to exactly the
// share (half of MaxQueuedBytes) and refuses one a byte larger; a
// notification larger than the share on its own is queued when nothing
// else is. Backlogged turns true only past the share.
func TestTryNotifyShareBoundary(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sizes      []int
		errs       []string
		backlogged []bool
	}{
		{"at the share", []int{1000, nbShare - 1000}, []string{"", ""}, []bool{false, false}},
		{"one byte past", []int{1000, nbShare - 999}, []string{"", ErrBackpressure.Error()}, []bool{false, false}},
		{"alone past the share", []int{nbShare + 1}, []string{""}, []bool{true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, _ := notifyBubble(t, nil)
				sizes, _ := json.Marshal(tc.sizes)
				id := p.request("Send", `{"sizes":`+string(sizes)+`}`)
				synctest.Wait() // every notification is queued or refused
				var sent []int
				for i, e := range tc.errs {
					if e == "" {
						sent = append(sent, tc.sizes[i])
					}
				}
				r := readReport(t, p, id, sent...)
				assert.Equal(t, tc.errs, r.Errs)
				assert.Equal(t, tc.backlogged, r.Backlogged)
			})
		})
	}
}

// Notify waits for room and sends the notification once the peer has read
// enough: here the second does not fit beside the first, being written, so
// it waits, blocked, until the peer reads the first. (A wait that returned
// while the notification still did not fit would spin on the CPU, and
// synctest.Wait below would never return.)
func TestNotifyWaitsUntilItFits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := notifyBubble(t, nil)
		id := p.request("Send", `{"sizes":[1000,`+itoa(nbShare-999)+`],"wait":true}`)
		synctest.Wait() // the handler waits, blocked, for room
		r := readReport(t, p, id, 1000, nbShare-999)
		assert.Equal(t, []string{"", ""}, r.Errs)
	})
}

// While the gateway-wide budget has no room for a notification, TryNotify
// refuses with ErrBackpressure and counts a budget refusal; Notify retries
// and sends once the budget has room, or gives up with its context. The
// budget keeps 1999 bytes free: requests are admitted and their reports
// fit, a tick of 2000 bytes does not.
func TestNotifyBudgetFull(t *testing.T) {
	const limit, tick = 8192, 2000
	held := func() *Budget {
		b := NewBudget(limit)
		b.Reserve(limit - (tick - 1))
		return b
	}
	t.Run("TryNotify refuses", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, mt := notifyBubble(t, held())
			r := readReport(t, p, p.request("Send", `{"sizes":[2000]}`))
			assert.Equal(t, []string{"gateway answer budget full: " + ErrBackpressure.Error()}, r.Errs)
			assert.Equal(t, 1.0, testutil.ToFloat64(mt.BudgetRefusals.WithLabelValues("framed")))
		})
	})
	t.Run("Notify waits for the budget", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			budget := held()
			p, _ := notifyBubble(t, budget)
			id := p.request("Send", `{"sizes":[2000],"wait":true}`)
			time.Sleep(time.Minute) // retried every 20 ms meanwhile
			synctest.Wait()
			budget.Release(limit - (tick - 1))
			r := readReport(t, p, id, tick)
			assert.Equal(t, []string{""}, r.Errs)
		})
	})
	t.Run("Notify gives up with its context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, _ := notifyBubble(t, held())
			r := readReport(t, p, p.request("Send", `{"sizes":[2000],"wait":true,"timeout_ms":1000}`))
			assert.Equal(t, []string{"notify: context deadline exceeded"}, r.Errs)
		})
	})
}

// Notify and TryNotify refuse params that are no JSON object and a
// notification larger than the message size limit, and report a closed
// connection as ErrClosed.
func TestNotifyRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _, _ := clientBubble(t)
		for _, send := range map[string]func(string, any) error{
			"TryNotify": c.TryNotify,
			"Notify":    func(m string, p any) error { return c.Notify(t.Context(), m, p) },
		} {
			err := send("tick", []int{1})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "notify tick: ")
			err = send("tick", tickParams(16<<10+transport.FrameOverhead+1))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "notify tick: ")
		}
		require.NoError(t, c.Close())
		assert.ErrorIs(t, c.TryNotify("tick", nil), ErrClosed)
		assert.ErrorIs(t, c.Notify(t.Context(), "tick", nil), ErrClosed)
	})
}

// A Notify waiting for the share gives up when its context ends, and when
// the connection closes, with the matching error.
func TestNotifyWaitEnds(t *testing.T) {
	// The client's queue holds 8 messages of 16 KiB; the share is 64 KiB.
	// The peer reads nothing: four notifications of 16000 bytes fill the
	// share but for 1536 bytes, and the fifth waits.
	fill := func(t *testing.T, c *Conn) {
		for range 4 {
			require.NoError(t, c.TryNotify("tick", tickParams(16000)))
		}
	}
	t.Run("context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _, _ := clientBubble(t)
			fill(t, c)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			start := time.Now()
			err := c.Notify(ctx, "tick", tickParams(16000))
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, "notify: context deadline exceeded", err.Error())
			assert.Equal(t, time.Second, time.Since(start))
			assert.Equal(t, ReasonNone, c.Reason(), "the connection lives on")
		})
	})
	t.Run("close", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _, _ := clientBubble(t)
			fill(t, c)
			done := make(chan error, 1)
			go func() { done <- c.Notify(t.Context(), "tick", tickParams(16000)) }()
			synctest.Wait()
			go func() { _ = c.Close() }()
			err := <-done
			assert.ErrorIs(t, err, ErrClosed)
			assert.Equal(t, "connection closed: local_close", err.Error())
		})
	})
}
