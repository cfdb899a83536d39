package httpfront

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/metrics"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// Issue 9 item 13: when the drain deadline passes, a request still in
// flight is answered SERVER_SHUTDOWN before its connection closes, even
// though its method ignores its context; calls of a batch that finished
// keep their answers.
func TestHTTPDrainDeadlineAnswersInFlight(t *testing.T) {
	e := newEnv(t, "")
	entered, release := e.registerStuck(2)
	defer release()
	budget := session.NewBudget(0) // no limit: it shows when an answer is accepted
	front := New(e.d.Front(metrics.FrontHTTP), Options{MaxBodyBytes: testMaxMessage, MaxResponseBytes: testMaxMessage, Budget: budget})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: front, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	url := "http://" + ln.Addr().String()

	type reply struct {
		status int
		out    []byte
	}
	single, batch := make(chan reply, 1), make(chan reply, 1)
	go func() {
		status, _, out := post(t, url, `{"jsonrpc":"2.0","method":"stuck","params":{},"id":5}`, nil)
		single <- reply{status, out}
	}()
	go func() {
		status, _, out := post(t, url, `[`+listCall+`,{"jsonrpc":"2.0","method":"stuck","params":{},"id":6}]`, nil)
		batch <- reply{status, out}
	}()
	<-entered
	<-entered
	require.Eventually(t, func() bool { return budget.Used() > 0 }, 30*time.Second, time.Millisecond,
		"the batch's first answer is accepted")

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the drain deadline has passed
	assert.False(t, Shutdown(ctx, srv, front, 10*time.Second))

	r := <-single
	assert.Equal(t, http.StatusOK, r.status)
	var a rpcAnswer
	require.NoError(t, json.Unmarshal(r.out, &a), "%s", r.out)
	assert.Equal(t, "5", string(a.ID))
	assert.Equal(t, transport.StringServerShutdown, a.code())

	r = <-batch
	var answers []rpcAnswer
	require.NoError(t, json.Unmarshal(r.out, &answers), "%s", r.out)
	require.Len(t, answers, 2)
	assert.Equal(t, "ok", answers[0].code())
	assert.Equal(t, transport.StringServerShutdown, answers[1].code())
	assert.Equal(t, "6", string(answers[1].ID))
}

// A drain that finishes in time answers normally and reports so.
func TestHTTPDrainInTime(t *testing.T) {
	e := newEnv(t, "")
	front := New(e.d.Front(metrics.FrontHTTP), Options{MaxBodyBytes: testMaxMessage, MaxResponseBytes: testMaxMessage})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: front, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	_, a, _ := post(t, "http://"+ln.Addr().String(), listCall, nil)
	assert.Equal(t, "ok", a.code())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	assert.True(t, Shutdown(ctx, srv, front, time.Second))
}

// After the front door expired, a request is answered SERVER_SHUTDOWN
// without running.
func TestHTTPExpiredRefusesNewCalls(t *testing.T) {
	e := newEnv(t, "")
	front, srv := e.serveHTTP(Options{})
	front.Expire()
	front.Expire() // idempotent
	status, a, _ := post(t, srv.URL, listCall, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, transport.StringServerShutdown, a.code())
}
