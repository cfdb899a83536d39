package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// holdSet keeps idle connections open: each has a reader goroutine that
// answers the server's keepalives and counts them.
type holdSet struct {
	conns    []*wireConn
	probes   atomic.Uint64
	dead     atomic.Int64 // connections that ended while held
	firstErr atomic.Pointer[error]
	closing  atomic.Bool
	wg       sync.WaitGroup
}

// holdConns opens n connections (numbered from offset, which spreads them
// over source addresses), initializes them unless noInit, and holds them.
// It returns the set and the number that failed to open.
func holdConns(ctx context.Context, t target, n, offset int, noInit bool, dialConc int) (*holdSet, int) {
	h := &holdSet{conns: make([]*wireConn, n)}
	sem := make(chan struct{}, max(dialConc, 1))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c := h.open(ctx, t, offset+i, noInit)
			if c != nil {
				// Answer keepalives from the start: opening thousands
				// of connections can take longer than a probe timeout.
				h.wg.Go(func() { h.serve(c) })
			}
			h.conns[i] = c
		})
	}
	wg.Wait()
	failed := 0
	live := h.conns[:0]
	for _, c := range h.conns {
		if c == nil {
			failed++
			continue
		}
		live = append(live, c)
	}
	h.conns = live
	return h, failed
}

func (h *holdSet) open(ctx context.Context, t target, i int, noInit bool) *wireConn {
	nc, err := t.dial(ctx, i)
	if err != nil {
		h.noteErr(err)
		return nil
	}
	c := newWireConn(nc)
	if noInit {
		return c
	}
	ka, err := c.initialize(t.Timeout)
	h.probes.Add(uint64(ka))
	if err != nil {
		h.noteErr(err)
		_ = nc.Close()
		return nil
	}
	return c
}

func (h *holdSet) noteErr(err error) { h.firstErr.CompareAndSwap(nil, &err) }

// serve answers keepalives until the connection ends.
func (h *holdSet) serve(c *wireConn) {
	for {
		m, ka, err := c.next()
		if err == nil {
			err = closeErr(m)
		}
		if err != nil {
			if !closedOnPurpose(&h.closing, err) {
				h.dead.Add(1)
				h.noteErr(err)
			}
			_ = c.nc.Close()
			return
		}
		if ka {
			h.probes.Add(1)
		}
	}
}

// err returns the first failure seen, or nil.
func (h *holdSet) err() error {
	if p := h.firstErr.Load(); p != nil {
		return *p
	}
	return nil
}

// close closes every connection and waits for the readers.
func (h *holdSet) close() {
	h.closing.Store(true)
	for _, c := range h.conns {
		_ = c.nc.Close()
	}
	h.wg.Wait()
}

// holdStatus is a snapshot of a holder's connections.
type holdStatus struct {
	Open, Failed int
	Probes       uint64
	Dead         int64
	Err          string
}

func (h *holdSet) status(failed int) holdStatus {
	st := holdStatus{Open: len(h.conns), Failed: failed, Probes: h.probes.Load(), Dead: h.dead.Load()}
	if err := h.err(); err != nil {
		st.Err = err.Error()
	}
	return st
}

// waitRounds waits until the probes answered reach want (0: never), or
// until maxWait has passed, polling status.
func waitRounds(ctx context.Context, want uint64, minWait, maxWait time.Duration, probes func() uint64) {
	start := time.Now()
	for {
		el := time.Since(start)
		if el >= maxWait || (el >= minWait && want > 0 && probes() >= want) || (el >= minWait && want == 0) {
			return
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return
		}
	}
}
