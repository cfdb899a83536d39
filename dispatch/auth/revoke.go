package auth

import (
	"context"
	"sync"
)

// Revocations ends long-lived streams (MCP sessions, SSE, watch_run) whose
// credential an auth file reload removed. A call is revalidated when it
// arrives, but a stream opened earlier sends on without ever asking again;
// Watch gives such a stream a context that ends once its identity no
// longer authenticates.
//
// Reloads reach it through Reloaded, which the owner of the Store calls
// from Options.OnReload. It is safe for concurrent use; a nil
// *Revocations watches nothing (a gateway without an auth file has no
// credential to remove).
type Revocations struct {
	authn Authenticator

	mu      sync.Mutex // guards watches
	watches map[*revocationWatch]struct{}
}

type revocationWatch struct {
	id     *Identity
	cancel context.CancelCauseFunc
}

// NewRevocations returns the Revocations of identities obtained from
// authn, which decides, on each reload, whether they still authenticate.
func NewRevocations(authn Authenticator) *Revocations {
	return &Revocations{authn: authn, watches: map[*revocationWatch]struct{}{}}
}

// Watch returns a context derived from ctx that also ends, with the
// revalidation's *Failure as its cause (context.Cause), after a reload
// that no longer authenticates id: its token or certificate matcher was
// removed, or a rejected file disabled its identity. It is checked once at
// once too, for a reload between the authentication and the Watch. stop
// must be called when the stream ends; it cancels the context.
func (r *Revocations) Watch(ctx context.Context, id *Identity) (watched context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if r == nil || id == nil {
		return ctx, func() { cancel(context.Canceled) }
	}
	w := &revocationWatch{id: id, cancel: cancel}
	r.mu.Lock()
	r.watches[w] = struct{}{}
	r.mu.Unlock()
	r.check(w)
	return ctx, func() {
		r.mu.Lock()
		delete(r.watches, w)
		r.mu.Unlock()
		cancel(context.Canceled)
	}
}

// Reloaded revalidates every watched identity and ends the streams of
// those that no longer authenticate. Its signature is Options.OnReload's;
// the policy and error are not needed, the Authenticator knows the
// current state (after a rejected file, the fail-closed one).
func (r *Revocations) Reloaded(*Policy, error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	ws := make([]*revocationWatch, 0, len(r.watches))
	for w := range r.watches {
		ws = append(ws, w)
	}
	r.mu.Unlock()
	for _, w := range ws {
		r.check(w)
	}
}

// Watching returns how many streams are watched, for tests and metrics.
func (r *Revocations) Watching() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.watches)
}

func (r *Revocations) check(w *revocationWatch) {
	if _, err := r.authn.Revalidate(w.id); err != nil {
		w.cancel(err)
	}
}
