package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// subscribedGuide writes an instruction skill and returns its SKILL.md
// URI and a client option collecting notifications/resources/updated.
func subscribedGuide(t *testing.T, dir, body string) (string, chan string, *mcp.ClientOptions) {
	t.Helper()
	skill := filepath.Join(dir, "guide")
	require.NoError(t, os.MkdirAll(skill, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "skill.toml"), []byte("name = \"acme.sub.guide\"\nversion = \"1.0.0\"\n"+
		"description = \"Watched.\"\nkind = \"instruction\"\n"), 0o644))
	writeGuideBody(t, dir, body)
	updated := make(chan string, 10)
	return "skill://acme.sub.guide/1.0.0/SKILL.md", updated, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	}
}

func writeGuideBody(t *testing.T, dir, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "guide", "SKILL.md"),
		[]byte("---\nname: Guide\nshort_description: Watched.\n---\n"+body), 0o644))
}

// subscribeAndChange subscribes cs to uri, changes the file with change,
// and checks that the update arrives and the new content reads back;
// completion/complete offers the skill's paths on the way.
func subscribeAndChange(t *testing.T, cs *mcp.ClientSession, uri string, updated chan string, change func()) {
	t.Helper()
	ctx := mcpContext(t)
	c, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "skill://{name}/{version}/{+path}"},
		Argument: mcp.CompleteParamsArgument{Name: "path", Value: "SK"}, Context: &mcp.CompleteContext{Arguments: map[string]string{"name": "acme.sub.guide"}}})
	require.NoError(t, err)
	assert.Equal(t, []string{"SKILL.md"}, c.Completion.Values)
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}))
	// Over stdio the SDK's client subscribes with a subscriptions/listen
	// request it does not wait on, so the server may take it after the
	// first change: the change is made again, a bounded number of times,
	// until one is notified.
	for attempt := 1; ; attempt++ {
		change()
		select {
		case got := <-updated:
			assert.Equal(t, uri, got)
		case <-time.After(10 * time.Second):
			require.Less(t, attempt, 12, "no notifications/resources/updated after the change")
			continue
		}
		break
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	require.NoError(t, err)
	assert.Contains(t, res.Contents[0].Text, "Second body.")
}

// `skillgate mcp` with its file watch: editing a subscribed skill file
// notifies the desktop host's client.
func TestMCPStdioSubscriptionFollowsTheFileWatch(t *testing.T) {
	dir := t.TempDir()
	uri, updated, opts := subscribedGuide(t, dir, "First body.\n")
	cs := connectStdio(t, opts, "--skills-dir", dir, "--sandbox-workers", "0")
	n := 0
	subscribeAndChange(t, cs, uri, updated, func() {
		n++
		writeGuideBody(t, dir, "Second body.\n"+strconv.Itoa(n)+"\n")
	})
}

// `skillgate serve` without a file watch: SIGHUP reloads, and a
// Streamable HTTP client subscribed to the changed file is notified.
func TestMCPHTTPSubscriptionFollowsSIGHUP(t *testing.T) {
	dir := t.TempDir()
	uri, updated, opts := subscribedGuide(t, dir, "First body.\n")
	g := startGateway(t, "--skills-dir", dir, "--watch-skills=false", "--sandbox-workers", "0")
	cs, err := connectHTTP(t, "http://"+g.addrs["http"]+"/mcp", "", nil, opts)
	require.NoError(t, err)
	n := 0
	subscribeAndChange(t, cs, uri, updated, func() {
		n++
		writeGuideBody(t, dir, "Second body.\n"+strconv.Itoa(n)+"\n")
		require.NoError(t, g.cmd.Process.Signal(syscall.SIGHUP))
	})
}

// `skillgate mcp` without a file watch: SIGHUP reloads, as for serve
// (both are built by newGateway), where the signal used to end the
// process and the desktop host's session with it.
func TestMCPStdioSubscriptionFollowsSIGHUP(t *testing.T) {
	dir := t.TempDir()
	uri, updated, opts := subscribedGuide(t, dir, "First body.\n")
	cs, cmd := startStdio(t, opts, "--skills-dir", dir, "--watch-skills=false", "--sandbox-workers", "0")
	n := 0
	subscribeAndChange(t, cs, uri, updated, func() {
		n++
		writeGuideBody(t, dir, "Second body.\n"+strconv.Itoa(n)+"\n")
		require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	})
}
