package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// ErrBackpressure is TryNotify's answer while the connection's write
// queue holds more than the share notifications may fill.
var ErrBackpressure = errors.New("session: write queue past its share for notifications")

// notifyShare is the part of MaxQueuedBytes that notifications may fill:
// the rest stays free for responses, so that a chatty stream can neither
// crowd answers out nor push the connection into the slow-reader cut-off.
func (c *Conn) notifyShare() int { return c.cfg.MaxQueuedBytes / 2 }

// TryNotify queues a server-to-client notification without blocking.
// params must marshal to a JSON object (see Handler for the accepted
// values). Its bytes count against the queue bound and the gateway-wide
// Budget like any answer. It returns an error matching ErrBackpressure,
// queuing nothing, while the queue is past the notifications' share or the
// budget is full, so that the caller can drop, merge or wait; a closed
// connection gives an error matching ErrClosed.
func (c *Conn) TryNotify(method string, params any) error {
	p, err := c.notificationFrame(method, params)
	if err != nil {
		return err
	}
	return c.w.pushNotification(p)
}

// Notify queues a notification, waiting while the queue is past the
// notifications' share until the writer makes room, the connection closes
// or ctx ends. The wait slows only the caller: the read loop and other
// requests of the connection go on.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	p, err := c.notificationFrame(method, params)
	if err != nil {
		return err
	}
	for {
		err := c.w.pushNotification(p)
		switch {
		case errors.Is(err, errBudgetFull):
			err = waitBudget(ctx)
		case errors.Is(err, ErrBackpressure):
			err = c.w.waitShare(ctx, len(*p))
		default:
			return err
		}
		if err != nil {
			putFrame(p)
			return err
		}
	}
}

// Backlogged reports whether the connection's queue is past the
// notifications' share: a sender may then merge or drop what it can
// rather than wait.
func (c *Conn) Backlogged() bool {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	return c.w.queued > c.notifyShare()
}

func waitBudget(ctx context.Context) error {
	t := time.NewTimer(budgetRetry)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("notify: %w", ctx.Err())
	}
}

func (c *Conn) notificationFrame(method string, params any) (*[]byte, error) {
	obj, err := transport.MarshalObject(params)
	if err != nil {
		return nil, fmt.Errorf("notify %s: %w", method, err)
	}
	p, err := c.frame(func(dst []byte) []byte { return transport.AppendNotification(dst, method, obj) })
	if err != nil {
		return nil, fmt.Errorf("notify %s: %w", method, err)
	}
	return p, nil
}

// pushNotification queues a notification frame unless the queue is past
// the share or the gateway-wide budget is full. On ErrBackpressure the
// caller keeps the frame; on any other outcome the queue owns it.
func (q *writeQueue) pushNotification(frame *[]byte) error {
	q.mu.Lock()
	closing := q.closing
	past := q.pastShareLocked(len(*frame))
	q.mu.Unlock()
	switch {
	case closing:
		putFrame(frame)
		return &CloseError{Reason: q.c.Reason()}
	case past:
		return ErrBackpressure
	case !q.share.Load().Fits(len(*frame)):
		q.c.cfg.Metrics.BudgetRefusals.WithLabelValues(metrics.FrontFramed).Inc()
		return errBudgetFull
	case !q.c.cfg.Budget.TryReserve(len(*frame)):
		q.c.cfg.Metrics.BudgetRefusals.WithLabelValues(metrics.FrontFramed).Inc()
		return errBudgetFull
	}
	if !q.push(frame, false, true, true) {
		return &CloseError{Reason: q.c.Reason()}
	}
	return nil
}

// pastShareLocked reports whether a notification of n bytes would take the
// queue past the notifications' share. An empty queue takes any
// notification, so that one larger than the share is still sent.
func (q *writeQueue) pastShareLocked(n int) bool {
	return q.queued+n > q.c.notifyShare() && q.queued > 0
}

// errBudgetFull is ErrBackpressure caused by the gateway-wide budget, or
// the owner's share of it, rather than this connection's queue.
var errBudgetFull = fmt.Errorf("gateway answer budget full: %w", ErrBackpressure)

// budgetRetry is how often Notify retries while the gateway-wide budget
// is full: the budget is freed by other connections' writers, which do not
// wake this one.
const budgetRetry = 20 * time.Millisecond

// waitShare blocks until a notification of n bytes fits the share, the
// queue closes or ctx ends. It waits for the very condition that refused
// the notification: waiting only for the queue to be back within the share
// would let Notify spin while a frame that fits the share but not beside
// what is queued waits for the writer.
func (q *writeQueue) waitShare(ctx context.Context, n int) error {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.changed.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	for q.pastShareLocked(n) && !q.closing && ctx.Err() == nil {
		q.startLocked()
		q.changed.Wait()
	}
	closing := q.closing
	q.mu.Unlock()
	switch {
	case closing:
		return &CloseError{Reason: q.c.Reason()}
	case ctx.Err() != nil:
		return fmt.Errorf("notify: %w", ctx.Err())
	}
	return nil
}
