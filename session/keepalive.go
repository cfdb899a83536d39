package session

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/skillgate/skillgate/transport"
)

// keepaliveState is the gateway's outstanding probe, if any.
type keepaliveState struct {
	id     string // "" when no probe is outstanding
	sentAt time.Time
}

// startTimers arms the keepalive schedule and, on the server side, the
// initialization deadline. Timers are runtime timers: an idle connection
// costs no goroutine.
func (c *Conn) startTimers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timer = time.AfterFunc(c.interval(), c.keepaliveTick)
	if c.server != nil && c.cfg.InitMethod != "" && c.cfg.InitTimeout > 0 {
		c.initT = time.AfterFunc(c.cfg.InitTimeout, c.initExpired)
	}
}

func (c *Conn) dropInitTimer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.initT != nil {
		c.initT.Stop()
		c.initT = nil
	}
}

func (c *Conn) stopTimers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.initT != nil {
		c.initT.Stop()
	}
}

// keepaliveTick runs when the keepalive timer fires: it aborts a connection
// whose probe went unanswered, puts the probe off to one interval after
// the peer was last heard from, and otherwise sends it.
func (c *Conn) keepaliveTick() {
	c.mu.Lock()
	if c.reason != ReasonNone {
		c.mu.Unlock()
		return
	}
	now := time.Now()
	if c.ka.id != "" {
		id := c.ka.id
		if wait := c.ka.sentAt.Add(c.cfg.KeepaliveTimeout).Sub(now); wait > 0 {
			c.timer.Reset(wait)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.abortWith(ReasonKeepalive, keepaliveError(id, c.cfg.KeepaliveTimeout))
		return
	}
	if wait := c.untilProbe(now); wait > 0 {
		c.timer.Reset(wait)
		c.mu.Unlock()
		return
	}
	id := c.newIDLocked()
	c.ka = keepaliveState{id: id, sentAt: now}
	c.timer.Reset(c.cfg.KeepaliveTimeout)
	c.mu.Unlock()
	// Quiet for a whole interval: once the probe's answer is read, the read
	// loop sheds the stack it grew while the connection was busy.
	c.moveLoop.Store(true)
	c.cfg.Metrics.KeepalivesSent.Inc()
	c.sendRequest(id, transport.MethodKeepalive, transport.EmptyObject, true)
}

// keepaliveAnsweredLocked handles the answer to the outstanding probe.
func (c *Conn) keepaliveAnsweredLocked(now time.Time) time.Duration {
	rtt := now.Sub(c.ka.sentAt)
	c.ka = keepaliveState{}
	c.timer.Reset(c.interval())
	return rtt
}

// untilProbe is how long the probe waits yet: the peer's last frame plus
// one interval, less now. Resetting the timer to it, rather than to a whole
// interval, keeps the probe from going out up to two intervals after the
// peer fell silent.
func (c *Conn) untilProbe(now time.Time) time.Duration {
	heard := c.started.Add(time.Duration(c.heard.Load()))
	return heard.Add(c.interval()).Sub(now)
}

// interval is the connection's keepalive interval.
func (c *Conn) interval() time.Duration { return c.kaInterval }

// jittered is the keepalive interval less up to 10% of it, drawn once per
// connection, so that connections opened together do not probe together.
func jittered(d time.Duration) time.Duration {
	return d - time.Duration(rand.Int64N(int64(d)/10+1))
}

func (c *Conn) initExpired() {
	c.mu.Lock()
	ready := c.state == stateReady
	c.mu.Unlock()
	if !ready {
		c.abortWith(ReasonInitTimeout, initTimeoutError(c.cfg.InitMethod, c.cfg.InitTimeout))
	}
}

func (c *Conn) newIDLocked() string {
	c.nextID++
	return c.cfg.IDPrefix + "-" + strconv.FormatUint(c.nextID, 10)
}

func (c *Conn) sendRequest(id, method string, params []byte, urgent bool) bool {
	p, err := c.frame(func(dst []byte) []byte { return transport.AppendRequest(dst, id, method, params) })
	if err != nil {
		return false
	}
	return c.w.push(p, urgent, true, false)
}
