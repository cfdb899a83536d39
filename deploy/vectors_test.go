package deploy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clientsPage holds the test vectors that client authors copy.
const clientsPage = "../docs/clients.md"

// vectorTimeout bounds one replayed connection. A safety net only: the
// slowest vector waits for two keepalive rounds of a second each.
const vectorTimeout = 60 * time.Second

// vectorStep is one line of a vector: bytes to send, a frame to expect
// exactly or up to its varying fields, or the gateway closing.
type vectorStep struct {
	kind  string // "-->", "<--", "<~~" or "closed"
	bytes []byte
}

// vector is one fenced block of the clients page: the gateway's extra flags
// and what goes over one connection.
type vector struct {
	line  int // where the block starts, for messages
	flags []string
	steps []vectorStep
}

// TestClientVectors replays every test vector of docs/clients.md against
// the real gateway, so that what client authors test against stays what
// the gateway does.
func TestClientVectors(t *testing.T) {
	text, err := os.ReadFile(clientsPage)
	require.NoError(t, err)
	vectors, err := parseVectors(string(text))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(vectors), 6, "the clients page lost its test vectors")
	gateways := map[string]*gatewayProc{}
	for _, v := range vectors {
		key := strings.Join(v.flags, " ")
		g, ok := gateways[key]
		if !ok {
			args := append([]string{"--skills-dir=../examples/skills", "--sandbox-workers=0"}, v.flags...)
			g = startGateway(t, args...)
			gateways[key] = g
		}
		t.Run(fmt.Sprintf("line %d", v.line), func(t *testing.T) {
			replay(t, g.addr("tcp"), v)
		})
	}
}

// TestParseVectorsRefusesBadBlocks: a typo in a vector block must fail the
// test rather than silently drop the vector.
func TestParseVectorsRefusesBadBlocks(t *testing.T) {
	for name, block := range map[string]string{
		"unknown prefix": "# gateway: make run\n==> 00000002:{}\\n\n",
		"other gateway":  "# gateway: docker run\n--> 00000002:{}\\n\n",
		"no steps":       "# gateway: make run\n",
		"wrong length":   "# gateway: make run\n--> 00000003:{}\\n\n",
	} {
		_, err := parseVectors("```\n" + block + "```\n")
		assert.Error(t, err, name)
	}
}

// parseVectors reads the fenced blocks whose first line is "# gateway:".
func parseVectors(text string) ([]vector, error) {
	var (
		vectors []vector
		cur     *vector
		inFence bool
	)
	for i, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			if inFence && cur != nil {
				if len(cur.steps) == 0 {
					return nil, fmt.Errorf("line %d: a vector without steps", cur.line)
				}
				vectors = append(vectors, *cur)
			}
			inFence, cur = !inFence, nil
		case inFence && strings.HasPrefix(line, "# gateway:"):
			flags, err := gatewayFlags(strings.TrimSpace(strings.TrimPrefix(line, "# gateway:")))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			cur = &vector{line: i + 1, flags: flags}
		case cur != nil:
			step, err := parseStep(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			cur.steps = append(cur.steps, step)
		}
	}
	return vectors, nil
}

// gatewayFlags reads "make run" or "skillgate serve FLAGS...".
func gatewayFlags(s string) ([]string, error) {
	if s == "make run" {
		return nil, nil
	}
	if rest, ok := strings.CutPrefix(s, "skillgate serve"); ok {
		return strings.Fields(rest), nil
	}
	return nil, fmt.Errorf("unknown gateway %q", s)
}

func parseStep(line string) (vectorStep, error) {
	if line == "<-- (closed)" {
		return vectorStep{kind: "closed"}, nil
	}
	kind, rest, ok := strings.Cut(line, " ")
	if !ok || (kind != "-->" && kind != "<--" && kind != "<~~") {
		return vectorStep{}, fmt.Errorf("a vector line starts with -->, <-- or <~~: %q", line)
	}
	// Everything is literal but a final \n, the frame's newline byte.
	if s, ok := strings.CutSuffix(rest, `\n`); ok {
		rest = s + "\n"
	}
	b := []byte(rest)
	if err := checkFrameLength(b); kind != "<~~" && err != nil {
		return vectorStep{}, err
	}
	return vectorStep{kind: kind, bytes: b}, nil
}

// checkFrameLength catches a vector whose header disagrees with its body.
// A lone header (an oversize one) and a header that is broken on purpose
// (not hex, no colon) are left alone.
func checkFrameLength(b []byte) error {
	if len(b) <= 9 || b[8] != ':' || b[len(b)-1] != '\n' {
		return nil
	}
	n, err := strconv.ParseUint(string(b[:8]), 16, 32)
	if err != nil {
		return nil
	}
	if int(n) != len(b)-10 {
		return fmt.Errorf("frame header %q does not match its %d-byte body", b[:9], len(b)-10)
	}
	return nil
}

func replay(t *testing.T, addr string, v vector) {
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(vectorTimeout)))
	r := bufio.NewReader(conn)
	for i, s := range v.steps {
		switch s.kind {
		case "-->":
			_, err := conn.Write(s.bytes)
			require.NoError(t, err, "step %d", i)
		case "<--":
			got, err := readRawFrame(r)
			require.NoError(t, err, "step %d", i)
			assert.Equal(t, string(s.bytes), string(got), "step %d", i)
		case "<~~":
			got, err := readRawFrame(r)
			require.NoError(t, err, "step %d", i)
			assert.Equal(t, varyingFieldsOut(s.bytes), varyingFieldsOut(got), "step %d", i)
		case "closed":
			_, err := r.ReadByte()
			var ne net.Error
			require.Error(t, err, "step %d: the gateway should have closed", i)
			assert.False(t, errors.As(err, &ne) && ne.Timeout(), "step %d: timed out instead of closing", i)
		}
	}
}

// readRawFrame reads one frame, header and newline included.
func readRawFrame(r *bufio.Reader) ([]byte, error) {
	head := make([]byte, 9)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, err
	}
	n, err := strconv.ParseUint(string(head[:8]), 16, 32)
	if err != nil || head[8] != ':' {
		return nil, fmt.Errorf("bad frame header %q", head)
	}
	rest := make([]byte, n+1)
	if _, err := io.ReadFull(r, rest); err != nil {
		return nil, err
	}
	return append(head, rest...), nil
}

var varyingRE = regexp.MustCompile(`"(session_id|version)":"[^"]*"`)

// varyingFieldsOut blanks what differs from run to run (the session id,
// the build's version; the header's length with them) in an Initialize
// answer.
func varyingFieldsOut(frame []byte) string {
	body := string(frame)
	if len(body) > 9 {
		body = body[9:]
	}
	return varyingRE.ReplaceAllString(body, `"$1":"…"`)
}
