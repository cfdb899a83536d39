// Package jrpc2peer puts github.com/creachadair/jrpc2 behind the framed
// transport: a channel.Channel that reads and writes length-prefixed frames,
// and a server that answers _Keepalive, Initialize and Echo the way a Go
// user of the library would write them.
package jrpc2peer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/channel"
	"github.com/creachadair/jrpc2/handler"
	"github.com/creachadair/jrpc2/server"

	"github.com/skillgate/skillgate/bench/framing"
)

// Channel is a channel.Channel over the framed transport. Recv and Send may
// be used concurrently by one receiver and one sender.
type Channel struct {
	r    *bufio.Reader
	wc   io.WriteCloser
	wbuf []byte // owned by the sender
}

// Framing is a channel.Framing for the framed transport.
func Framing(r io.Reader, wc io.WriteCloser) channel.Channel {
	return &Channel{r: bufio.NewReaderSize(r, 4<<10), wc: wc}
}

// Send writes msg as one frame with one write: the library has no flush
// hook, so it cannot coalesce.
func (c *Channel) Send(msg []byte) error {
	c.wbuf = framing.Append(c.wbuf[:0], msg)
	_, err := c.wc.Write(c.wbuf)
	return err
}

// Recv returns the next frame's body in a buffer of its own, since the
// library may keep it past the next call.
func (c *Channel) Recv() ([]byte, error) {
	return framing.Read(c.r, nil, framing.MaxBody)
}

// Close closes the underlying stream.
func (c *Channel) Close() error { return c.wc.Close() }

// Methods returns the method table of the comparison: _Keepalive and
// Initialize answer an empty object, Echo answers its params.
func Methods() handler.Map {
	empty := func(context.Context, *jrpc2.Request) (any, error) { return struct{}{}, nil }
	return handler.Map{
		"_Keepalive": empty,
		"Initialize": empty,
		"Echo": func(_ context.Context, req *jrpc2.Request) (any, error) {
			return json.RawMessage(req.ParamString()), nil
		},
	}
}

// Serve serves the comparison methods on every connection ln accepts until
// ln is closed or ctx ends. concurrency bounds the handlers running at once
// per connection (0: the library default, the number of CPUs).
func Serve(ctx context.Context, ln net.Listener, concurrency int) error {
	opts := &server.LoopOptions{ServerOptions: &jrpc2.ServerOptions{Concurrency: concurrency}}
	err := server.Loop(ctx, server.NetAccepter(ln, Framing), server.Static(Methods()), opts)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
