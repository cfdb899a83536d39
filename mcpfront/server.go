package mcpfront

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/dispatch"
	sgauth "github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/skills"
)

// Tools modes: which tools a client sees.
const (
	ToolsSkills   = "skills"   // one tool per action skill
	ToolsProtocol = "protocol" // the Skills Protocol methods as tools
	ToolsBoth     = "both"
)

// DefaultMaxSkillTools is how many action skills are offered as tools of
// their own before they are reached through the protocol tools only: a
// client shows every tool to its model, and hundreds crowd it out.
const DefaultMaxSkillTools = 64

// Options configure a Server.
type Options struct {
	// Front invokes methods (dispatch.Dispatcher.Front(metrics.FrontMCP)).
	Front *dispatch.Front
	// Skills is the catalog tools, resources and prompts are made from.
	Skills dispatch.CatalogSource
	// Tools is ToolsSkills, ToolsProtocol or ToolsBoth ("" means both).
	Tools string
	// MaxSkillTools bounds the per-skill tools; 0 means the default.
	MaxSkillTools int
	// Identity serves a session that carries none (stdio, one local
	// client); nil refuses such requests.
	Identity *sgauth.Identity
	// Version is the server version reported at initialize.
	Version string
	// Limiter applies identities' request rates to the MCP requests that
	// do not become a method call (initialize, lists, ping, reads refused
	// before a call) and their connection limits to HTTP sessions. It must
	// be the dispatcher's (dispatch.Options.Limiter), so that an identity
	// has one budget across front doors; nil applies none here.
	Limiter *sgauth.Limiter
	Logger  zerolog.Logger
}

// Server is the MCP server of the gateway.
type Server struct {
	opts Options
	mcp  *mcp.Server

	mu   sync.Mutex // serializes Refresh
	have offered    // what the SDK server currently offers
	subs *subscriptions
	// listening holds the sessions that take log messages.
	listening *listening

	sessions *sessions // of the HTTP endpoint; nil until HTTPHandler
}

// New returns a Server offering the catalog as it is now; call Refresh
// after each skill reload.
func New(opts Options) (*Server, error) {
	switch opts.Tools {
	case "":
		opts.Tools = ToolsBoth
	case ToolsSkills, ToolsProtocol, ToolsBoth:
	default:
		return nil, fmt.Errorf("%w, not %q", ErrBadToolsMode, opts.Tools)
	}
	if opts.MaxSkillTools <= 0 {
		opts.MaxSkillTools = DefaultMaxSkillTools
	}
	s := &Server{opts: opts, have: newOffered(), subs: newSubscriptions(), listening: newListening()}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "skillgate", Version: opts.Version}, &mcp.ServerOptions{
		Logger: slog.New(zerologHandler{log: opts.Logger}),
		Instructions: "Tools run skills (sandboxed Python packages) of this gateway. " +
			"list_skills and describe_skill browse them; skill files are resources skill://<name>/<version>/<path>.",
		CompletionHandler:  s.complete,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
	})
	s.mcp.AddReceivingMiddleware(s.listening.track)
	s.mcp.AddReceivingMiddleware(s.filterLists)
	s.mcp.AddReceivingMiddleware(s.limitRequests) // outermost: refused requests cost their token too
	if opts.Tools != ToolsSkills {
		s.addProtocolTools()
	}
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "blob", URITemplate: "blob://{blob_id}",
		Description: "A blob of the caller (created with create_blob or written by a run), read as read_blob reads it.",
	}, s.readBlob)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "skill-file", URITemplate: skillTemplate,
		Description: "A file of any version of a skill, as read_skill_file reads it (resources/list has the default versions' files).",
	}, s.readTemplateSkillFile)
	s.Refresh()
	return s, nil
}

// SDK returns the SDK server, for transports of a caller's own.
func (s *Server) SDK() *mcp.Server { return s.mcp }

// Run serves one client over t (mcp.StdioTransport for `skillgate mcp`)
// until it disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}

// HTTPOptions configure the Streamable HTTP endpoint.
type HTTPOptions struct {
	// Authenticate identifies the request's caller (bearer token or client
	// certificate), as dispatch.Front.AuthenticateRequest does.
	Authenticate func(*http.Request) (*sgauth.Identity, error)
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// SessionTimeout closes a session that has sent no request for this
	// long (an open GET stream does not count), freeing what it holds;
	// 0 means DefaultSessionTimeout.
	SessionTimeout time.Duration
	// MaxSessions bounds the sessions open at once, across identities;
	// past it a new session is refused 503 OVERLOADED. 0: no bound.
	MaxSessions int
}

// DefaultSessionTimeout bounds idle sessions: without a bound, every
// client that never says goodbye would keep its session forever.
const DefaultSessionTimeout = 30 * time.Minute

// eventStoreBytes bounds the SSE events kept for resumption, across all
// sessions.
const eventStoreBytes = 16 << 20

// HTTPHandler returns the Streamable HTTP endpoint. Each request is
// authenticated; a refused one gets 401 with a Bearer challenge before
// the SDK sees it. The identity rides in the request's token info, which
// the SDK hands to every method handler and which binds a session to the
// identity that opened it.
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	events := mcp.NewMemoryEventStore(nil)
	events.SetMaxBytes(eventStoreBytes)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		// Origin and Host are checked by the listener's guard, with the
		// operator's allowed origins and hosts, as for /rpc.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        opts.MaxBodyBytes,
		SessionTimeout:             opts.SessionTimeout,
		EventStore:                 events, // a client that lost its stream resumes it with Last-Event-ID
		Logger:                     slog.New(zerologHandler{log: s.opts.Logger}),
	})
	// Sessions of a credential an auth file reload removed are closed
	// through the Front, whose Authenticator knows of every reload.
	t := &sessions{max: int64(max(opts.MaxSessions, 0)), limiter: s.opts.Limiter, front: s.opts.Front,
		log: s.opts.Logger}
	if s.opts.Front != nil {
		t.metrics = s.opts.Front.Metrics()
		t.metrics.HTTPRefused.WithLabelValues(refusedSessions) // at zero from the start
	}
	s.sessions = t
	return authenticated(h, opts.Authenticate, t, opts.MaxBodyBytes)
}

// authenticated identifies each request and marks it for the SDK's bearer
// middleware, which is the only way into the token info the SDK passes to
// every method handler. A request that creates a session (a POST
// without Mcp-Session-Id carrying an initialize) is admitted by t first, or refused with an HTTP
// status and a JSON-RPC error before the SDK builds anything. Every answer
// is marked private.
func authenticated(next http.Handler, authenticate func(*http.Request) (*sgauth.Identity, error), t *sessions, maxBody int64) http.Handler {
	bearer := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		rc, _ := r.Context().Value(identityKey{}).(*requestCaller)
		if rc == nil || rc.id == nil {
			return nil, auth.ErrInvalidToken
		}
		extra := map[string]any{extraIdentity: rc.id}
		if rc.slot != nil {
			extra[extraSlot] = rc.slot
		}
		return &auth.TokenInfo{UserID: rc.id.Name(), Extra: extra}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := &privateAnswers{ResponseWriter: rw}
		id, err := authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="skillgate"`)
			http.Error(w, "authentication required: send Authorization: Bearer <token> ("+err.Error()+")", http.StatusUnauthorized)
			return
		}
		rc := &requestCaller{id: id}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			if reqID, init := peekInitialize(r, maxBody); init {
				sl, no := t.admit(id)
				if no != nil {
					no.write(w, reqID)
					return
				}
				defer sl.abandon()
				rc.slot = sl
			}
		}
		r = r.WithContext(context.WithValue(r.Context(), identityKey{}, rc))
		if r.Header.Get("Authorization") == "" {
			// Open mode or a client certificate: the identity is known
			// already, the SDK's middleware only needs a header to read.
			r.Header.Set("Authorization", "Bearer -")
		}
		bearer.ServeHTTP(w, r)
	})
}

// requestCaller is who makes an HTTP request, and the session slot it was
// admitted with when it creates a session.
type requestCaller struct {
	id   *sgauth.Identity
	slot *slot
}

type identityKey struct{}

const (
	extraIdentity = "skillgate.identity"
	extraSlot     = "skillgate.slot"
)

// identity is who makes an MCP request.
func (s *Server) identity(req mcp.Request) *sgauth.Identity {
	if req != nil {
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			id, _ := ex.TokenInfo.Extra[extraIdentity].(*sgauth.Identity)
			return id
		}
	}
	return s.opts.Identity
}

// callerKey marks a request's context with its identity, for the requests
// the SDK makes up inside another one (the resources/subscribe of a
// subscriptions/listen), which carry no token info of their own.
type callerKey struct{}

// identityIn is who makes req, or else the request whose context ctx is.
func (s *Server) identityIn(ctx context.Context, req mcp.Request) *sgauth.Identity {
	if req != nil {
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			return s.identity(req)
		}
	}
	if id, ok := ctx.Value(callerKey{}).(*sgauth.Identity); ok {
		return id
	}
	return s.opts.Identity
}

// slotOf is the session slot a request that creates a session carries.
func slotOf(req mcp.Request) *slot {
	if req == nil {
		return nil
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		sl, _ := ex.TokenInfo.Extra[extraSlot].(*slot)
		return sl
	}
	return nil
}

// OpenSessions returns how many Streamable HTTP sessions are open.
func (s *Server) OpenSessions() int {
	if s.sessions == nil {
		return 0
	}
	return s.sessions.Open()
}

func (s *Server) catalog() *skills.Catalog { return s.opts.Skills.Catalog() }
