package mcpfront

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Over StdioTransport a line longer than MaxStdioLine is answered -32700
// and skipped without being held whole, and a session of a protocol
// version that allows batches gets its batch answered as one; the session
// goes on after both.
func TestStdioTransportLongLinesAndBatches(t *testing.T) {
	g := newGateway(t, gatewayOptions{skillsDir: t.TempDir()})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.srv.Run(ctx, StdioTransport(inR, outW, zerolog.Nop())) }()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		<-done
	})
	go func() {
		w := bufio.NewWriter(inW)
		_, _ = w.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
		_, _ = w.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
		_, _ = w.WriteString(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("x", MaxStdioLine) + `"}}` + "\n")
		_, _ = w.WriteString(`[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]` + "\n")
		_, _ = w.WriteString(`{"jsonrpc":"2.0","id":5,"method":"ping"}` + "\n")
		_ = w.Flush()
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Requests are served concurrently: the answers (the batch's is sent
	// when both of its calls are done) come in any order.
	var got []string
	for len(got) < 4 {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "output ended: %q", got)
			got = append(got, l)
		case <-time.After(time.Minute):
			t.Fatalf("not every answer came: %q", got)
		}
	}
	var parseErr, batch, last string
	for _, l := range got {
		switch {
		case strings.Contains(l, `"code":-32700`):
			parseErr = l
		case strings.HasPrefix(l, "["):
			batch = l
		case strings.Contains(l, `"id":5`):
			last = l
		}
	}
	assert.Contains(t, parseErr, `longer than`, "the long line is answered: %q", got)
	assert.Contains(t, batch, `"id":3`, "the batch is answered as one: %q", got)
	assert.Contains(t, batch, `"id":4`)
	assert.NotEmpty(t, last, "the session went on: %q", got)
}
