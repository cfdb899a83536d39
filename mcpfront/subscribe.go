package mcpfront

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillgate/skillgate/skills"
)

// maxSubscriptions bounds one session's resource subscriptions: the SDK
// keeps each one until the session ends, and a client could otherwise
// grow that without end.
const maxSubscriptions = 1024

// subscriptions tracks the resources sessions subscribed to, beside the
// SDK (which keeps who gets notifications/resources/updated), so that a
// skill reload knows which files to compare and a session's number of
// subscriptions stays bounded.
//
// A skill:// URI names one version of a file, so it changes only when a
// reload finds different content under the same name and version, or the
// file gone or back. A blob never changes (new content is a new blob), so
// a blob:// subscription is accepted and never notified; so is a URI that
// names nothing the gateway serves.
type subscriptions struct {
	mu        sync.Mutex
	bySession map[*mcp.ServerSession]map[string]bool // guarded by mu
	refs      map[string]int                         // uri -> sessions subscribed; guarded by mu
	sha       map[string]string                      // skill:// uri -> sha256 at last look, "" none; guarded by mu
}

func newSubscriptions() *subscriptions {
	return &subscriptions{bySession: map[*mcp.ServerSession]map[string]bool{}, refs: map[string]int{}, sha: map[string]string{}}
}

// add records ss's subscription to uri, whose file has sha now (skill://
// URIs); the first one of a session also starts watching for its end.
func (t *subscriptions) add(ss *mcp.ServerSession, uri string, skillFile bool, sha string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	mine := t.bySession[ss]
	if mine[uri] {
		return nil
	}
	if len(mine) >= maxSubscriptions {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("too many subscriptions: a session may hold %d", maxSubscriptions)}
	}
	if mine == nil {
		mine = map[string]bool{}
		t.bySession[ss] = mine
		go func() {
			_ = ss.Wait()
			t.drop(ss)
		}()
	}
	mine[uri] = true
	if t.refs[uri]++; t.refs[uri] == 1 && skillFile {
		t.sha[uri] = sha
	}
	return nil
}

// remove forgets ss's subscription to uri, if it had one.
func (t *subscriptions) remove(ss *mcp.ServerSession, uri string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bySession[ss][uri] {
		delete(t.bySession[ss], uri)
		t.unrefLocked(uri)
	}
}

// drop forgets every subscription of a session that ended (the SDK drops
// its own then).
func (t *subscriptions) drop(ss *mcp.ServerSession) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uri := range t.bySession[ss] {
		t.unrefLocked(uri)
	}
	delete(t.bySession, ss)
}

func (t *subscriptions) unrefLocked(uri string) {
	if t.refs[uri]--; t.refs[uri] <= 0 {
		delete(t.refs, uri)
		delete(t.sha, uri)
	}
}

// changed returns the subscribed skill files whose content in cat differs
// from the last look, and remembers the new one.
func (t *subscriptions) changed(cat *skills.Catalog) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for uri, old := range t.sha {
		if now := fileSHA(cat, uri); now != old {
			t.sha[uri] = now
			out = append(out, uri)
		}
	}
	return out
}

// parseSkillURI splits skill://<name>/<version>/<path>, unescaping the
// path; ok is false for anything else.
func parseSkillURI(uri string) (name, version, p string, ok bool) {
	rest, found := strings.CutPrefix(uri, "skill://")
	if !found {
		return "", "", "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", false
	}
	p, err := url.PathUnescape(parts[2])
	if err != nil {
		return "", "", "", false
	}
	return parts[0], parts[1], p, true
}

// fileSHA is the sha256 of the skill file uri names in cat, "" if it
// names none.
func fileSHA(cat *skills.Catalog, uri string) string {
	name, version, p, ok := parseSkillURI(uri)
	if !ok {
		return ""
	}
	sk, err := cat.Resolve(name, version)
	if err != nil || sk.Manifest.Version != version {
		return ""
	}
	f, err := sk.Stat(p)
	if err != nil {
		return ""
	}
	return f.SHA256
}

// subscribe accepts resources/subscribe. A skill file the caller may not
// see is refused as not found, as reading it is; one that does not exist
// (yet) is accepted, and notified when a reload makes it appear.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	if uri == "" {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "subscribe: uri is required"}
	}
	isSkill := skillOfURI(uri) != ""
	if isSkill && !resourceVisible(s.identityIn(ctx, req), uri) {
		return mcp.ResourceNotFoundError(uri)
	}
	sha := ""
	if isSkill {
		sha = fileSHA(s.catalog(), uri)
	}
	return s.subs.add(req.Session, uri, isSkill, sha)
}

func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	s.subs.remove(req.Session, req.Params.URI)
	return nil
}

// notifyUpdated sends notifications/resources/updated, through the SDK,
// to the sessions subscribed to the skill files a reload changed.
func (s *Server) notifyUpdated(uris []string) {
	for _, uri := range uris {
		_ = s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}
