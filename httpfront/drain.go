package httpfront

import (
	"context"
	"net/http"
	"time"
)

// Shutdown drains srv, whose handler is front: it stops accepting and
// waits for requests in flight until ctx is done. If some are still in
// flight then, front expires, so each of them answers SERVER_SHUTDOWN for
// the calls not yet finished, and gets up to grace to write it before
// every connection is closed. It returns within the drain deadline plus
// grace even when a method ignores its context; it reports whether every
// request finished in time.
func Shutdown(ctx context.Context, srv *http.Server, front *Server, grace time.Duration) bool {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(sctx) }()
	select {
	case err := <-done:
		return err == nil
	case <-ctx.Done():
	}
	front.Expire()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		cancel()
		<-done
		_ = srv.Close()
	}
	return false
}
