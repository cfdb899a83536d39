// Package auth decides who a client is, what it may do, and how much of the
// gateway it may use.
//
// Identity and access: a Store holds the auth file (--auth-file), a YAML
// list of identities, each with hashed bearer tokens and/or client
// certificate matchers, the canonical methods it may call, the skill
// namespaces it may see, and its limits. Parse validates the whole file and
// reports every problem with its line and column. The Store serves lookups
// from an immutable snapshot behind an atomic pointer; Reload and Watch
// replace the snapshot. A rejected file fails closed: identities whose
// entries it changed or removed are disabled until a valid version loads,
// the others keep their previous version.
// Store.Revalidate carries an Identity obtained earlier (on a long-lived
// connection) to the current snapshot, so reloads and revocations reach
// connections that are already open. UntilRevoked does so for a
// long-lived stream (watch_run, server-sent events, an MCP session)
// between its calls: woken by Store.Changed at each new version, it ends
// the stream's context once its credential no longer authenticates.
//
// Without an auth file, Open authenticates everyone as the Anonymous
// identity, and AnonymousAllowed decides whether that is acceptable for the
// addresses the gateway listens on.
//
// Fair use: a Limiter holds, per identity name, a token bucket of requests
// and counters of runs and connections in flight.
//
// Errors: ErrNoCredentials and ErrBadCredentials mean AUTH_REQUIRED,
// ErrPermissionDenied means PERMISSION_DENIED; all three arrive wrapped in
// a *Failure carrying a bounded FailureReason for metrics, with a message
// that is safe for the client and never tells whether a token exists.
// ErrRateLimited, ErrTooManyRuns and ErrTooManyConnections arrive in a
// *LimitError with a retry delay.
//
// This package imports no other package of the project; the dispatcher
// maps its errors to wire errors and calls it around every method.
package auth
