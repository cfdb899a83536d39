package session

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/internal/testpki"
	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/transport"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, generated once per test binary, plus a client certificate
// of another CA.
type testPKI struct {
	pool           *x509.CertPool
	server, client tls.Certificate
	otherClient    tls.Certificate
}

var (
	pkiOnce sync.Once
	pki     *testPKI
)

func getPKI(testing.TB) *testPKI {
	pkiOnce.Do(func() {
		ca := testpki.NewCA("skillgate test CA")
		pki = &testPKI{
			pool:        ca.Pool(),
			server:      ca.Server(),
			client:      ca.Client("device-42"),
			otherClient: testpki.NewCA("other CA").Client("intruder"),
		}
	})
	return pki
}

func (p *testPKI) serverTLS(mutual bool) *tls.Config {
	if mutual {
		return testpki.ServerConfig(p.server, p.pool)
	}
	return testpki.ServerConfig(p.server, nil)
}

func (p *testPKI) clientTLS(cert *tls.Certificate) *tls.Config {
	return testpki.ClientConfig(p.pool, cert)
}

// testHandler serves the application methods used by the tests.
type testHandler struct {
	release chan struct{} // Block waits on it
	started chan string   // Block reports its id here
}

func newTestHandler() *testHandler {
	return &testHandler{release: make(chan struct{}), started: make(chan string, 100)}
}

// Inline answers BigInline on the read loop, as a handler does for methods
// that never block.
func (h *testHandler) Inline(method []byte) bool { return string(method) == "BigInline" }

func (h *testHandler) Handle(ctx context.Context, req *Request) (any, error) {
	switch req.Method {
	case "Initialize":
		var p struct{ Token string }
		_ = json.Unmarshal(req.Params, &p)
		if p.Token == "bad" {
			return nil, transport.AppError("AUTH_REQUIRED", "bad token")
		}
		return map[string]any{"protocol_version": "1.0"}, nil
	case "Echo":
		return req.Params, nil
	case "Block":
		h.started <- req.ID()
		select {
		case <-h.release:
			return map[string]string{"released": req.ID()}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "Stubborn": // ignores its context
		h.started <- req.ID()
		<-h.release
		return map[string]string{"late": req.ID()}, nil
	case "Hold":
		var p struct{ N int }
		_ = json.Unmarshal(req.Params, &p)
		h.started <- req.ID()
		select {
		case <-h.release:
			return map[string]string{"data": strings.Repeat("x", p.N)}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "Panic":
		panic("boom")
	case "Fail":
		return nil, transport.AppError("AMOUNT_TOO_HIGH", "Requested amount is too high.").WithDetails("limit 1000")
	case "Big", "BigInline":
		var p struct{ N int }
		_ = json.Unmarshal(req.Params, &p)
		return map[string]string{"data": strings.Repeat("x", p.N)}, nil
	case "NotObject":
		return json.RawMessage(`[1,2]`), nil
	case "Plain":
		return nil, errors.New("secret internal detail")
	case "AbortParse":
		return nil, &Abort{Err: transport.NewError(transport.CodeParseError, "Parse error.").WithDetails("bad params")}
	case "AbortInvalid":
		return nil, &Abort{Err: transport.NewError(transport.CodeInvalidRequest, "Invalid request.").WithDetails("bad shape")}
	}
	return nil, transport.NewError(transport.CodeMethodNotFound, "Method not found.")
}

// fixture is a server plus a way to open raw connections to it over one of
// the transports every lifecycle test runs on.
type fixture struct {
	t       *testing.T
	srv     *Server
	h       *testHandler
	metrics *metrics.Metrics
	kind    string
	ln      net.Listener
	clientT *tls.Config
}

var kinds = []string{"pipe", "tcp", "tls", "mtls"}

func testConfig() Config {
	c := DefaultConfig()
	c.MaxMessageSize = 64 << 10
	c.FrameTimeout = 2 * time.Second
	c.WriteTimeout = 2 * time.Second
	c.HandshakeTimeout = 2 * time.Second
	c.InitMethod = "Initialize"
	return c
}

func newFixture(t *testing.T, kind string, mutate func(*Config)) *fixture {
	t.Helper()
	return newFixtureWrapped(t, kind, nil, mutate)
}

// newFixtureWrapped is newFixture with the server's handler built around
// the fixture's testHandler by wrap (nil: the testHandler itself).
func newFixtureWrapped(t *testing.T, kind string, wrap func(*testHandler) Handler, mutate func(*Config)) *fixture {
	t.Helper()
	cfg := testConfig()
	f := &fixture{t: t, h: newTestHandler(), kind: kind, metrics: metrics.New("test")}
	cfg.Metrics = f.metrics
	if mutate != nil {
		mutate(&cfg)
	}
	var h Handler = f.h
	if wrap != nil {
		h = wrap(f.h)
	}
	srv, err := NewServer(cfg, h)
	require.NoError(t, err)
	f.srv = srv
	if kind != "pipe" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		if kind == "tls" || kind == "mtls" {
			p := getPKI(t)
			ln = tls.NewListener(ln, p.serverTLS(kind == "mtls"))
			var cert *tls.Certificate
			if kind == "mtls" {
				cert = &p.client
			}
			f.clientT = p.clientTLS(cert)
		}
		f.ln = ln
		go func() { _ = srv.Serve(ln, kind) }()
	}
	t.Cleanup(func() {
		close(f.h.release)
		_ = srv.Close()
	})
	return f
}

// dial opens a raw connection to the fixture's server.
func (f *fixture) dial() *peer {
	f.t.Helper()
	var nc net.Conn
	if f.kind == "pipe" {
		a, b := net.Pipe()
		f.srv.ServeConn(b, "pipe")
		nc = a
	} else {
		var err error
		nc, err = net.Dial("tcp", f.ln.Addr().String())
		require.NoError(f.t, err)
		if f.clientT != nil {
			tc := tls.Client(nc, f.clientT)
			require.NoError(f.t, tc.Handshake())
			nc = tc
		}
	}
	p := &peer{t: f.t, nc: nc, fr: transport.NewReader(nc, 1<<20)}
	f.t.Cleanup(func() { _ = nc.Close() })
	return p
}

// peer speaks raw frames to the server under test.
type peer struct {
	t  *testing.T
	nc net.Conn
	fr *transport.Reader
	n  int
	// bubbled peers run inside a synctest bubble, where a read deadline
	// would fire as soon as every goroutine blocks.
	bubbled bool
}

// wireMsg is a received frame decoded loosely for assertions.
type wireMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      *string         `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int32  `json:"code"`
		Message string `json:"message"`
		Data    struct {
			StringCode string `json:"string_code"`
			Details    string `json:"details"`
			Retry      *struct {
				SuggestedDelayMS int64 `json:"suggested_delay_ms"`
				MaxAttempts      int   `json:"max_attempts"`
			} `json:"retry"`
		} `json:"data"`
	} `json:"error"`
	CloseError *struct {
		Error struct {
			Code    int32  `json:"code"`
			Message string `json:"message"`
			Data    struct {
				StringCode string `json:"string_code"`
				Details    string `json:"details"`
			} `json:"data"`
		} `json:"error"`
	} `json:"-"`
}

func (p *peer) writeRaw(s string) {
	p.t.Helper()
	_ = p.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := p.nc.Write([]byte(s))
	require.NoError(p.t, err)
}

func frame(body string) string {
	b, _ := transport.AppendFrame(nil, []byte(body), 1<<30)
	return string(b)
}

func (p *peer) send(body string) { p.t.Helper(); p.writeRaw(frame(body)) }

// request sends a request with a fresh id and returns the id.
func (p *peer) request(method, params string) string {
	p.t.Helper()
	p.n++
	id := "pt-" + itoa(p.n)
	p.send(`{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `,"id":"` + id + `"}`)
	return id
}

// recv reads the next frame, failing after a generous timeout.
func (p *peer) recv() *wireMsg {
	p.t.Helper()
	m, err := p.tryRecv(5 * time.Second)
	require.NoError(p.t, err)
	return m
}

func (p *peer) tryRecv(timeout time.Duration) (*wireMsg, error) {
	if !p.bubbled {
		_ = p.nc.SetReadDeadline(time.Now().Add(timeout))
	}
	body, err := p.fr.ReadFrame()
	if err != nil {
		return nil, err
	}
	var tm transport.Message
	require.NoError(p.t, transport.Decode(body, &tm), "server sent an invalid message: %s", body)
	m := &wireMsg{}
	require.NoError(p.t, json.Unmarshal(body, m))
	if m.Method == transport.MethodCloseReason {
		m.CloseError = &struct {
			Error struct {
				Code    int32  `json:"code"`
				Message string `json:"message"`
				Data    struct {
					StringCode string `json:"string_code"`
					Details    string `json:"details"`
				} `json:"data"`
			} `json:"error"`
		}{}
		require.NoError(p.t, json.Unmarshal(m.Params, m.CloseError))
	}
	return m, nil
}

// recvResponse reads frames until the response to id, answering the
// server's keepalives on the way.
func (p *peer) recvResponse(id string) *wireMsg {
	p.t.Helper()
	for range 100 {
		m := p.recv()
		if m.Method == transport.MethodKeepalive && m.ID != nil {
			p.send(`{"jsonrpc":"2.0","result":{},"id":"` + *m.ID + `"}`)
			continue
		}
		require.NotNil(p.t, m.ID, "expected the response to %s, got %+v", id, m)
		require.Equal(p.t, id, *m.ID)
		return m
	}
	p.t.Fatal("no response")
	return nil
}

func (p *peer) call(method, params string) *wireMsg {
	p.t.Helper()
	return p.recvResponse(p.request(method, params))
}

func (p *peer) initialize() {
	p.t.Helper()
	m := p.call("Initialize", `{"protocol_version":"1.0","client":{"name":"test","version":"0"}}`)
	require.Nil(p.t, m.Error)
}

// expectAbort reads until a _CloseReason, checks its code, then expects
// the server to close the connection.
func (p *peer) expectAbort(code int32, stringCode string) *wireMsg {
	p.t.Helper()
	for range 100 {
		m := p.recv()
		if m.Method != transport.MethodCloseReason {
			continue
		}
		require.Nil(p.t, m.ID, "_CloseReason must be a notification")
		require.Equal(p.t, code, m.CloseError.Error.Code, "details: %s", m.CloseError.Error.Data.Details)
		require.Equal(p.t, stringCode, m.CloseError.Error.Data.StringCode)
		p.expectEOF()
		return m
	}
	p.t.Fatal("no _CloseReason")
	return nil
}

func (p *peer) expectEOF() {
	p.t.Helper()
	_, err := p.tryRecv(5 * time.Second)
	require.Error(p.t, err)
	var ne net.Error
	require.False(p.t, errors.As(err, &ne) && ne.Timeout(), "connection still open: %v", err)
}

func itoa(n int) string { return strconv.Itoa(n) }
