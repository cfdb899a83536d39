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
	Logger  zerolog.Logger
}

// Server is the MCP server of the gateway.
type Server struct {
	opts Options
	mcp  *mcp.Server

	mu   sync.Mutex // serializes Refresh
	have offered    // what the SDK server currently offers
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
	s := &Server{opts: opts, have: newOffered()}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "skillgate", Version: opts.Version}, &mcp.ServerOptions{
		Logger: slog.New(zerologHandler{log: opts.Logger}),
		Instructions: "Tools run skills (sandboxed Python packages) of this gateway. " +
			"list_skills and describe_skill browse them; skill files are resources skill://<name>/<version>/<path>.",
	})
	s.mcp.AddReceivingMiddleware(s.filterLists)
	if opts.Tools != ToolsSkills {
		s.addProtocolTools()
	}
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "blob", URITemplate: "blob://{blob_id}",
		Description: "A blob of the caller (created with create_blob or written by a run), read as read_blob reads it.",
	}, s.readBlob)
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
	// long; 0 means DefaultSessionTimeout.
	SessionTimeout time.Duration
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
	return authenticated(h, opts.Authenticate)
}

// withIdentity marks an authenticated request for the SDK's bearer
// middleware, which is the only way into the token info the SDK passes on.
func authenticated(next http.Handler, authenticate func(*http.Request) (*sgauth.Identity, error)) http.Handler {
	bearer := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		id, _ := r.Context().Value(identityKey{}).(*sgauth.Identity)
		if id == nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id.Name(), Extra: map[string]any{extraIdentity: id}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="skillgate"`)
			http.Error(w, "authentication required: send Authorization: Bearer <token> ("+err.Error()+")", http.StatusUnauthorized)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), identityKey{}, id))
		if r.Header.Get("Authorization") == "" {
			// Open mode or a client certificate: the identity is known
			// already, the SDK's middleware only needs a header to read.
			r.Header.Set("Authorization", "Bearer -")
		}
		bearer.ServeHTTP(w, r)
	})
}

type identityKey struct{}

const extraIdentity = "skillgate.identity"

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

func (s *Server) catalog() *skills.Catalog { return s.opts.Skills.Catalog() }
