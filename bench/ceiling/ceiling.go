// Package ceiling is the practical ceiling of the comparison: a minimal
// goroutine-per-connection framed JSON-RPC server that decodes each request
// with encoding/json into a small envelope and answers every request with an
// empty result. Reads go through a bufio.Reader; answers are buffered and
// flushed when the input is drained, so a pipelined batch costs one write.
//
// It checks nothing a real gateway must check (ids, params, limits beyond
// the frame size), answers no keepalive of its own and never sends requests:
// it is the cost of framing plus encoding/json and nothing more.
package ceiling

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"sync"

	"github.com/skillgate/skillgate/bench/framing"
)

const bufSize = 4 << 10

// envelope is the part of a message the ceiling looks at.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
}

// Serve accepts connections on ln until it is closed and serves each on a
// goroutine of its own. It returns nil once ln is closed and every
// connection has ended.
func Serve(ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	conns := newConnSet()
	defer conns.closeAll()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		conns.add(nc)
		wg.Go(func() {
			defer conns.remove(nc)
			ServeConn(nc)
		})
	}
}

// ServeConn serves one connection until the peer closes it or sends a
// malformed frame, then closes it.
func ServeConn(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReaderSize(nc, bufSize)
	bw := bufio.NewWriterSize(nc, bufSize)
	var (
		in, out []byte
		env     envelope
	)
	for {
		body, err := framing.Read(br, in, framing.MaxBody)
		if err != nil {
			return
		}
		in = body[:0]
		env = envelope{}
		if json.Unmarshal(body, &env) != nil {
			return
		}
		if env.Method != "" && env.ID != nil {
			out = appendResult(out[:0], env.ID)
			if _, err := bw.Write(out); err != nil {
				return
			}
		}
		if br.Buffered() == 0 && bw.Flush() != nil {
			return
		}
	}
}

// appendResult appends the framed empty result answering id.
func appendResult(dst, id []byte) []byte {
	n := len(`{"jsonrpc":"2.0","id":`) + len(id) + len(`,"result":{}}`)
	dst = framing.AppendHeader(dst, n)
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":{}}`...)
	return append(dst, '\n')
}

// connSet tracks open connections so that Serve can close them on return.
type connSet struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newConnSet() *connSet { return &connSet{conns: make(map[net.Conn]struct{})} }

func (s *connSet) add(nc net.Conn) {
	s.mu.Lock()
	s.conns[nc] = struct{}{}
	s.mu.Unlock()
}

func (s *connSet) remove(nc net.Conn) {
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for nc := range s.conns {
		_ = nc.Close()
	}
}
