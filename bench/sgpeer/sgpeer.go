// Package sgpeer puts github.com/sourcegraph/jsonrpc2 behind the framed
// transport: an ObjectCodec that reads and writes length-prefixed frames,
// and a server that answers _Keepalive, Initialize and Echo the way a Go
// user of the library would write them.
package sgpeer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/skillgate/skillgate/bench/framing"
)

// Codec is a jsonrpc2.ObjectCodec for the framed transport.
type Codec struct{}

// WriteObject writes obj as one frame. The buffered stream of the library
// flushes after every object, so each message is one write.
func (Codec) WriteObject(stream io.Writer, obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = stream.Write(framing.Append(nil, data))
	return err
}

// ReadObject reads one frame and decodes it into v.
func (Codec) ReadObject(stream *bufio.Reader, v any) error {
	body, err := framing.Read(stream, nil, framing.MaxBody)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

var errMethodNotFound = &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found"}

// handle answers the comparison methods: _Keepalive and Initialize with an
// empty object, Echo with its params.
func handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case "_Keepalive", "Initialize":
		return struct{}{}, nil
	case "Echo":
		if req.Params == nil {
			return struct{}{}, nil
		}
		return req.Params, nil
	}
	return nil, errMethodNotFound
}

// Handler returns the library handler of the comparison: synchronous (the
// library default, one request at a time per connection) or wrapped in
// jsonrpc2.AsyncHandler (a goroutine per request).
func Handler(async bool) jsonrpc2.Handler {
	h := jsonrpc2.HandlerWithError(handle).SuppressErrClosed()
	if async {
		return jsonrpc2.AsyncHandler(h)
	}
	return h
}

// Serve serves every connection ln accepts until ln is closed or ctx ends,
// then closes the open connections and waits for them.
func Serve(ctx context.Context, ln net.Listener, async bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	h := Handler(async)
	for {
		nc, err := ln.Accept()
		if err != nil {
			cancel()
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		wg.Go(func() {
			c := jsonrpc2.NewConn(ctx, jsonrpc2.NewBufferedStream(nc, Codec{}), h)
			select {
			case <-c.DisconnectNotify():
			case <-ctx.Done():
				_ = c.Close()
			}
		})
	}
}
