package auth

import (
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Authenticator turns credentials into an Identity. *Store (an auth file)
// and *Open (no auth file) implement it. Implementations are safe for
// concurrent use.
type Authenticator interface {
	// Authenticate checks a bearer token, or, when token is empty, the
	// verified client certificate of cs (which may be nil). A token that
	// fails is not retried as a certificate, so a wrong token is always
	// reported. Errors are *Failure values.
	Authenticate(token string, cs *tls.ConnectionState) (*Identity, error)
	// Revalidate returns the current version of an identity obtained
	// earlier, or a *Failure if its credential no longer authenticates it.
	Revalidate(id *Identity) (*Identity, error)
}

// Options configure a Store.
type Options struct {
	Logger zerolog.Logger
	// Methods are the canonical method names the file may list; empty
	// means DefaultMethods().
	Methods []string
	// Debounce is how long Watch waits for a burst of file events to end
	// before reloading. Default 250ms.
	Debounce time.Duration
	// OnReload, if set, is called after every reload that read a changed
	// file: with the new policy, or with the error that kept the old one.
	// It is called with the reload lock held and must not call Reload.
	OnReload func(p *Policy, err error)
}

// DefaultDebounce is Options.Debounce's default.
const DefaultDebounce = 250 * time.Millisecond

// Store holds the current version of an auth file. Lookups read an
// immutable snapshot through an atomic pointer and never block; Reload and
// Watch replace it.
type Store struct {
	path string
	opts Options
	cur  atomic.Pointer[Policy]
	mu   sync.Mutex // serializes reloads
	// changed wakes the streams of UntilRevoked at each new version.
	changed changes
}

var _ Authenticator = (*Store)(nil)

// Load reads and validates the auth file at path. Unlike a reload, a bad
// file is an error here: there is no previous version to keep.
func Load(path string, opts Options) (*Store, error) {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	s := &Store{path: path, opts: opts}
	pol, err := s.read()
	if err != nil {
		return nil, fmt.Errorf("load auth file: %w", err)
	}
	s.publish(pol, nil)
	return s, nil
}

// Path returns the auth file's path.
func (s *Store) Path() string { return s.path }

// Policy returns the current version of the file.
func (s *Store) Policy() *Policy { return s.cur.Load() }

// Reload re-reads the file. If it is invalid (or gone), the reload fails
// closed: identities whose entries the new file changed or removed are
// disabled until a valid version loads, the others keep their current
// version (see failClosed); the error is logged and returned. A file that
// cannot be read for another reason changes nothing. An unchanged file is
// not parsed again.
func (s *Store) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, readErr := readLimited(s.path)
	if readErr == nil && hashBytes(data) == s.cur.Load().sum {
		s.opts.Logger.Debug().Str("file", s.path).Msg("auth file unchanged")
		return nil
	}
	var pol *Policy
	err := readErr
	if err == nil {
		pol, err = s.parse(data)
	}
	if err != nil {
		s.opts.Logger.Error().Err(err).Str("file", s.path).Msg("auth file not reloaded")
		s.failClosed(data, readErr)
		s.notify(nil, err)
		return fmt.Errorf("reload auth file: %w", err)
	}
	s.publish(pol, s.cur.Load())
	s.notify(pol, nil)
	return nil
}

func (s *Store) notify(p *Policy, err error) {
	if s.opts.OnReload != nil {
		s.opts.OnReload(p, err)
	}
}

func (s *Store) read() (*Policy, error) {
	data, err := readLimited(s.path)
	if err != nil {
		return nil, err
	}
	return s.parse(data)
}

func (s *Store) parse(data []byte) (*Policy, error) {
	pol, err := Parse(data, ParseOptions{Methods: s.opts.Methods})
	if fe, ok := err.(*FileError); ok {
		fe.File = s.path
	}
	return pol, err
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// publish makes pol current. Tokens of the previous version (and those it
// already remembered) that pol no longer lists are remembered as revoked,
// so that their use is reported as "revoked" rather than "invalid"; the
// set only grows with tokens that were once configured.
func (s *Store) publish(pol, prev *Policy) {
	carryRevoked(pol, prev)
	s.cur.Store(pol)
	s.changed.broadcast()
	log := s.opts.Logger
	for _, w := range pol.warnings {
		log.Warn().Str("file", s.path).Str("problem", w.String()).Msg("auth file warning")
	}
	log.Info().Str("file", s.path).Int("identities", len(pol.names)).Int("tokens", pol.nTokens).
		Int("certificates", len(pol.certs)).Int("revoked_tokens", len(pol.revoked)).Msg("auth file loaded")
}

func carryRevoked(pol, prev *Policy) {
	pol.revoked = map[digest]struct{}{}
	if prev != nil {
		for d := range prev.revoked {
			pol.revoked[d] = struct{}{}
		}
		for d := range prev.tokens {
			pol.revoked[d] = struct{}{}
		}
		for d := range pol.tokens {
			delete(pol.revoked, d)
		}
	}
}

// AuthenticateToken returns the identity owning the bearer token. See
// Policy for why a map lookup is as safe as a constant-time comparison.
func (s *Store) AuthenticateToken(token string) (*Identity, error) {
	return s.cur.Load().authenticateToken(token)
}

// AuthenticateCert returns the identity of the verified client certificate
// of a TLS connection: the leaf of the first verified chain is matched on
// its URI SANs, DNS SANs and subject common name. A certificate whose
// attributes match two identities is refused.
func (s *Store) AuthenticateCert(cs *tls.ConnectionState) (*Identity, error) {
	return s.cur.Load().authenticateCert(cs)
}

// Authenticate implements Authenticator.
func (s *Store) Authenticate(token string, cs *tls.ConnectionState) (*Identity, error) {
	if token != "" {
		return s.AuthenticateToken(token)
	}
	return s.AuthenticateCert(cs)
}

// Revalidate carries an identity from the version of the file it was
// obtained from to the current one, so that a long-lived connection
// follows reloads: changed methods, namespaces and limits apply to its
// next call. It fails with reason "revoked" when the credential it was
// obtained with (token, certificate matcher, or name for Policy.Identity)
// is gone or now belongs to another identity. On the current version it
// returns id itself without allocating.
func (s *Store) Revalidate(id *Identity) (*Identity, error) {
	cur := s.cur.Load()
	switch {
	case id == nil || id.cred.kind == credAnon:
		return nil, failMissing
	case id.snap == cur:
		return id, nil
	}
	return cur.revalidate(id)
}

// Open is the Authenticator of a gateway without auth file: everyone is the
// anonymous identity, whatever they present.
type Open struct{ id *Identity }

var _ Authenticator = (*Open)(nil)

// NewOpen returns an Open authenticator whose identity has the given
// limits.
func NewOpen(limits Limits) *Open { return &Open{id: Anonymous(limits)} }

// Identity returns the anonymous identity.
func (o *Open) Identity() *Identity { return o.id }

// Authenticate returns the anonymous identity.
func (o *Open) Authenticate(string, *tls.ConnectionState) (*Identity, error) { return o.id, nil }

// Revalidate returns the anonymous identity.
func (o *Open) Revalidate(*Identity) (*Identity, error) { return o.id, nil }
