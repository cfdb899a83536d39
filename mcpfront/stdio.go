package mcpfront

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// MaxStdioLine bounds one line (one message) read over stdio, as the
// SDK's own stdio transport bounds it.
const MaxStdioLine = mcp.DefaultMaxLineLength

// batchVersions are the protocol versions that still allow JSON-RPC
// batches (2025-06-18 removed them); the SDK ends a session of a later
// version that sends one.
var batchVersions = []string{"2024-11-05", "2025-03-26"}

// StdioTransport is the transport of `skillgate mcp`: newline-delimited
// JSON-RPC over in and out, as mcp.StdioTransport speaks it, except that a
// line that is not a message the SDK can take is answered and skipped:
// -32700 for a line that is not JSON (or is longer than MaxStdioLine),
// -32600 for JSON that is no JSON-RPC message or a batch the session's
// protocol version does not allow. The SDK would end the session on such a
// line, and with it the process. Closing the transport closes in when it
// is an io.Closer; out is never closed.
func StdioTransport(in io.Reader, out io.Writer, log zerolog.Logger) mcp.Transport {
	w := &lockedWriter{w: out}
	return &mcp.IOTransport{Reader: &lineFilter{src: in, in: bufio.NewReaderSize(in, 64<<10), out: w, log: log}, Writer: w}
}

// lockedWriter serializes the SDK's writes (one message per Write) with
// the filter's error answers, so that lines never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// lineFilter passes the SDK only lines that are JSON-RPC messages it
// accepts, answering the others itself. Read is called by one goroutine,
// the SDK's reader.
type lineFilter struct {
	src     io.Reader
	in      *bufio.Reader
	out     *lockedWriter
	log     zerolog.Logger
	pending []byte // an accepted line not yet read out
	version string // the protocol version the client asked for at initialize
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, tooLong, err := f.readLine()
		if tooLong {
			f.refuse(nil, jsonrpc.CodeParseError, fmt.Sprintf("Parse error: a line longer than %d bytes", MaxStdioLine))
		} else if msg := bytes.TrimSpace(line); len(msg) > 0 && f.accept(msg) {
			f.pending = append(msg, '\n')
		}
		if err != nil {
			if len(f.pending) > 0 {
				break // the last line had no newline; EOF comes with the next Read
			}
			return 0, err
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

func (f *lineFilter) Close() error {
	if c, ok := f.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// readLine reads one line, discarding (and reporting) one that is longer
// than MaxStdioLine without holding more than that.
func (f *lineFilter) readLine() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := f.in.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxStdioLine {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return line, tooLong, err
		}
	}
}

// accept reports whether the SDK can take msg (one trimmed line); if it
// cannot, the client gets the error instead.
func (f *lineFilter) accept(msg []byte) bool {
	if !json.Valid(msg) {
		f.refuse(nil, jsonrpc.CodeParseError, "Parse error: the line is not JSON")
		return false
	}
	if msg[0] != '[' {
		m, err := jsonrpc.DecodeMessage(msg)
		if err != nil {
			f.refuse(idOf(msg), jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error())
			return false
		}
		f.noteVersion(m)
		return true
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(msg, &batch); err != nil || len(batch) == 0 {
		f.refuse(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch")
		return false
	}
	if f.version != "" && !slices.Contains(batchVersions, f.version) {
		f.refuse(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not supported in protocol version "+f.version)
		return false
	}
	ids := map[jsonrpc.ID]bool{}
	for _, raw := range batch {
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			f.refuse(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: in a batch: "+err.Error())
			return false
		}
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			if ids[r.ID] {
				f.refuse(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a batch repeats a request id")
				return false
			}
			ids[r.ID] = true
		}
		f.noteVersion(m)
	}
	return true
}

// noteVersion remembers the protocol version an initialize asks for,
// which decides whether batches may follow.
func (f *lineFilter) noteVersion(m jsonrpc.Message) {
	r, ok := m.(*jsonrpc.Request)
	if !ok || r.Method != "initialize" {
		return
	}
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(r.Params, &p) == nil {
		f.version = p.ProtocolVersion
	}
}

// idOf is the id of a message that failed to decode, when it is one a
// response can carry (a string or a number); nil otherwise.
func idOf(msg []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(m.ID, &v) != nil {
		return nil
	}
	switch v.(type) {
	case string, float64:
		return m.ID
	}
	return nil
}

// refuse answers a line the SDK cannot take with a JSON-RPC error.
func (f *lineFilter) refuse(id json.RawMessage, code int64, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	resp, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	if err != nil {
		return
	}
	f.log.Warn().Int64("code", code).Str("error", message).Msg("stdio: a line that is not a JSON-RPC message was answered and skipped")
	if _, err := f.out.Write(append(resp, '\n')); err != nil {
		f.log.Debug().Err(err).Msg("stdio: cannot answer a malformed line")
	}
}
