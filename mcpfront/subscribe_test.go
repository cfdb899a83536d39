package mcpfront

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skillgate/skillgate/dispatch/auth"
)

// updates collects the notifications/resources/updated a client gets.
type updates chan string

func (u updates) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		u <- r.Params.URI
	}}
}

// next is the next updated URI, within a bound.
func (u updates) next(t *testing.T) string {
	t.Helper()
	select {
	case uri := <-u:
		return uri
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/resources/updated")
		return ""
	}
}

// none checks that nothing else was notified: the sentinel, updated
// after everything before it, arrives next.
func (u updates) none(t *testing.T, sentinel string) {
	t.Helper()
	assert.Equal(t, sentinel, u.next(t))
}

// waitSubscribed waits until the server holds (or, with false, no longer
// holds) a subscription to each of uris: over stdio the SDK's client
// subscribes and unsubscribes by opening and ending a subscriptions/listen
// request, without waiting for the server to have taken it.
func (g *gateway) waitSubscribed(t *testing.T, held bool, uris ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		g.srv.subs.mu.Lock()
		defer g.srv.subs.mu.Unlock()
		for _, uri := range uris {
			if (g.srv.subs.refs[uri] > 0) != held {
				return false
			}
		}
		return true
	}, 30*time.Second, 5*time.Millisecond, "subscriptions held: %v %v", held, uris)
}

// reload makes the registry read dir again and the server follow it, as a
// file watch or SIGHUP does.
func (g *gateway) reload(t *testing.T) {
	t.Helper()
	_, err := g.reg.Reload()
	require.NoError(t, err)
	g.srv.Refresh()
}

// A subscribed skill file is notified when a reload changes it, removes
// it or makes it appear; files that did not change, unsubscribed ones and
// other sessions' subscriptions are not.
func testSubscriptionsNotify(t *testing.T, protocol string, connect func(g *gateway, u updates) *mcp.ClientSession) {
	dir := t.TempDir()
	b := instructionSkill("acme.b.guide", "1.0.0", "Guide b.", "Do b.\n")
	b["notes.md"] = "notes\n"
	b["sentinel.md"] = "0\n"
	skillFiles(t, dir, "b", b)
	g := newGateway(t, gatewayOptions{skillsDir: dir, mcp: Options{Identity: auth.Anonymous(auth.Limits{})}})
	u := make(updates, 16)
	cs := connect(g, u)
	require.Equal(t, protocol, cs.InitializeResult().ProtocolVersion)
	const (
		body     = "skill://acme.b.guide/1.0.0/SKILL.md"
		notes    = "skill://acme.b.guide/1.0.0/notes.md"
		fresh    = "skill://acme.b.guide/1.0.0/later/new%20file.md"
		toml     = "skill://acme.b.guide/1.0.0/skill.toml"
		sentinel = "skill://acme.b.guide/1.0.0/sentinel.md"
	)
	for _, uri := range []string{body, notes, fresh, toml, sentinel} {
		require.NoError(t, cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}), uri)
	}
	require.NoError(t, cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: body}), "twice is once")
	require.NoError(t, cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "blob://0123abcd"}), "a blob never changes; accepted")
	require.NoError(t, cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "test://watched-resource"}), "nothing served: accepted, never notified")
	g.waitSubscribed(t, true, body, notes, fresh, toml, sentinel, "blob://0123abcd", "test://watched-resource")

	// The body changes, notes goes, a new file appears; skill.toml stays.
	skillFiles(t, dir, "b", map[string]string{"SKILL.md": "---\nname: Guide\nshort_description: A guide.\n---\nDo b better.\n",
		"later/new file.md": "new\n", "sentinel.md": "1\n"})
	require.NoError(t, os.Remove(filepath.Join(dir, "b", "notes.md")))
	g.reload(t)
	var got []string
	for range 4 {
		got = append(got, u.next(t))
	}
	assert.ElementsMatch(t, []string{body, notes, fresh, sentinel}, got)
	rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: body})
	require.NoError(t, err)
	assert.Contains(t, rr.Contents[0].Text, "Do b better.")

	// A reload that changes nothing sends nothing; unsubscribed files are
	// not notified.
	g.reload(t)
	require.NoError(t, cs.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: body}))
	require.NoError(t, cs.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: "skill://never/1.0.0/subscribed"}), "harmless")
	g.waitSubscribed(t, false, body)
	skillFiles(t, dir, "b", map[string]string{"SKILL.md": "---\nname: Guide\nshort_description: A guide.\n---\nDo b best.\n",
		"sentinel.md": "2\n"})
	g.reload(t)
	u.none(t, sentinel)
}

func TestSubscriptionsNotifyHTTP(t *testing.T) {
	testSubscriptionsNotify(t, "2025-11-25", func(g *gateway, u updates) *mcp.ClientSession { return g.client(t, "", u.options()) })
}

// Over stdio the SDK client speaks the protocol version whose
// subscriptions ride on subscriptions/listen, a request the SDK turns into
// resources/subscribe inside the server: the same handler, the same
// notifications.
func TestSubscriptionsNotifyStdio(t *testing.T) {
	testSubscriptionsNotify(t, "2026-07-28", func(g *gateway, u updates) *mcp.ClientSession { return g.stdio(t, u.options()) })
}

// stdio connects an SDK client over the gateway's own stdio transport,
// as `skillgate mcp` serves a desktop host, on pipes.
func (g *gateway) stdio(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.srv.Run(ctx, StdioTransport(inR, outW, zerolog.Nop())) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, opts).
		Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		<-done
	})
	return cs
}

// A skill file the caller may not see cannot be subscribed to, as it
// cannot be read; a session's subscriptions are bounded, and forgotten
// when it ends.
func TestSubscriptionsVisibilityAndBounds(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: visibilitySkills(t), authFile: visibilityAuth()})
	reader := g.client(t, tokenReader, nil)
	runner := g.client(t, tokenRunner, nil)
	for _, uri := range []string{"skill://other.c.run/1.0.0/SKILL.md", "skill://other.nope/1.0.0/SKILL.md"} {
		err := reader.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri})
		assert.Equal(t, mcp.ResourceNotFoundError(uri), error(rpcErr(t, err)), "hidden or absent: the same answer")
	}
	err := runner.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "skill://other.c.run/1.0.0/SKILL.md"})
	assert.Equal(t, mcp.ResourceNotFoundError("skill://other.c.run/1.0.0/SKILL.md"), error(rpcErr(t, err)), "no read_skill_file")
	require.NoError(t, reader.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "skill://acme.b.guide/1.0.0/SKILL.md"}))
	err = reader.Subscribe(t.Context(), &mcp.SubscribeParams{URI: ""})
	assert.Contains(t, rpcErr(t, err).Message, "uri is required")

	all := g.client(t, tokenAll, nil)
	for i := range maxSubscriptions - 1 {
		require.NoError(t, all.Subscribe(t.Context(), &mcp.SubscribeParams{URI: fmt.Sprintf("skill://acme.a.run/1.0.0/f%d", i)}))
	}
	require.NoError(t, all.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "blob://ab"}), "the last one allowed")
	err = all.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "blob://cd"})
	assert.Contains(t, rpcErr(t, err).Message, "too many subscriptions")
	require.NoError(t, all.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: "blob://ab"}))
	require.NoError(t, all.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "blob://cd"}), "room again")

	g.srv.subs.mu.Lock()
	assert.Len(t, g.srv.subs.bySession, 2)
	g.srv.subs.mu.Unlock()
	require.NoError(t, all.Close())
	require.NoError(t, reader.Close())
	require.Eventually(t, func() bool {
		g.srv.subs.mu.Lock()
		defer g.srv.subs.mu.Unlock()
		return len(g.srv.subs.bySession) == 0 && len(g.srv.subs.refs) == 0 && len(g.srv.subs.sha) == 0
	}, 30*time.Second, 10*time.Millisecond, "an ended session's subscriptions are forgotten")
}

// The skill:// template reads any version's files, not only the listed
// default ones; a file that does not exist is a resource not found.
func TestSkillTemplateReadsAnyVersion(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: completionSkills(t), authFile: visibilityAuth()})
	reader := g.client(t, tokenReader, nil)
	res, err := reader.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "skill://acme.b.guide/1.1.0-rc.1/SKILL.md"})
	require.NoError(t, err, "not listed, read through the template")
	assert.Contains(t, res.Contents[0].Text, "Do b next.")
	assert.Equal(t, "text/markdown", res.Contents[0].MIMEType)
	for _, uri := range []string{"skill://acme.a.run/1.0.0/nope.py", "skill://acme.a.run/3.0.0/SKILL.md",
		"skill://acme.a.run/latest/SKILL.md", "skill://other.c.run/1.0.0/SKILL.md", "skill://acme.a.run/1.0.0/%zz"} {
		_, err := reader.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		assert.Equal(t, mcp.ResourceNotFoundError(uri), error(rpcErr(t, err)), uri)
	}
}
