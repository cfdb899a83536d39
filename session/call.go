package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/transport"
)

type callResult struct {
	result json.RawMessage
	err    error
}

// Call sends a request and waits for its response. params must marshal to a
// JSON object (nil sends {}). An error response is returned as a
// *transport.Error; a closed connection as an error matching ErrClosed.
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	obj, err := transport.MarshalObject(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan callResult, 1)
	c.mu.Lock()
	if c.reason != ReasonNone {
		err := c.closeErr
		c.mu.Unlock()
		return nil, err
	}
	id := c.newIDLocked()
	if c.pending == nil {
		c.pending = make(map[string]chan callResult)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	if !c.sendRequest(id, method, obj, false) {
		c.forgetCall(id)
		if err := c.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("call: request does not fit the message size limit")
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		c.forgetCall(id)
		return nil, ctx.Err()
	}
}

func (c *Conn) forgetCall(id string) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// failPending ends every outstanding call with the close error.
func (c *Conn) failPending() {
	c.mu.Lock()
	pending, err := c.pending, c.closeErr
	c.pending = nil
	c.mu.Unlock()
	for _, ch := range pending {
		ch <- callResult{err: err}
	}
}

// onResponse matches a response to the keepalive probe or a pending call,
// and reports whether it answered the probe.
// A response to an id this side never sent (or no longer waits for) is
// logged and reported to the peer with an _Error notification; it does not
// abort the connection, since the message itself is well formed.
func (c *Conn) onResponse(m *transport.Message) bool {
	c.mu.Lock()
	if c.ka.id != "" && string(m.ID) == c.ka.id {
		rtt := c.keepaliveAnsweredLocked(time.Now())
		c.mu.Unlock()
		c.cfg.Metrics.KeepaliveRTT.Observe(rtt.Seconds())
		if m.Kind == transport.KindError {
			c.Log(zerolog.DebugLevel).Str("string_code", m.Error.EffectiveCode()).Msg("peer answered _Keepalive with an error")
		}
		return true
	}
	ch, ok := c.pending[string(m.ID)]
	delete(c.pending, string(m.ID))
	c.mu.Unlock()
	if ok {
		r := callResult{result: bytes.Clone(m.Result)}
		if m.Kind == transport.KindError {
			r = callResult{err: m.Error}
		}
		ch <- r
		return false
	}
	c.Log(zerolog.WarnLevel).Bytes("id", m.ID).Msg("response to an unknown request id ignored")
	p, err := c.frame(func(dst []byte) []byte {
		return transport.AppendErrorNotification(dst, m.RawID, errUnexpectedResponse)
	})
	if err == nil {
		c.w.push(p, false, false, false) // from the read loop
	}
	return false
}

var errUnexpectedResponse = transport.AppError(transport.StringUnexpectedResponse,
	"Response to a request id this endpoint did not send or no longer waits for; ignored.")
