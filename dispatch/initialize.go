package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// MethodInitialize initializes a framed connection.
const MethodInitialize = "Initialize"

// ResponseTooLargeHint tells a client whose answer did not fit the message
// size limit how to ask for less; both front doors end RESPONSE_TOO_LARGE
// details with it.
const ResponseTooLargeHint = "request less data (for example read_blob with mode sample_head and max_bytes)"

// ConfigureSession sets what the connection layer takes from the
// application: the method that initializes a connection and the hint of an
// over-size answer.
func ConfigureSession(c *session.Config) {
	c.InitMethod = MethodInitialize
	c.TooLargeHint = ResponseTooLargeHint
}

// ProtocolVersion is the application protocol version the gateway speaks.
// Clients must send the same major version.
const ProtocolVersion = "1.0"

// InitializeResult is the result of Initialize.
type InitializeResult struct {
	ProtocolVersion     string     `json:"protocol_version"`
	Server              ServerInfo `json:"server"`
	SessionID           string     `json:"session_id"`
	Identity            string     `json:"identity"`
	MaxMessageSize      int        `json:"max_message_size"`
	KeepaliveIntervalMS int64      `json:"keepalive_interval_ms"`
	KeepaliveTimeoutMS  int64      `json:"keepalive_timeout_ms"`
	Methods             []string   `json:"methods"`
}

// ServerInfo names the server.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// initialize validates the client's protocol version and returns the
// session's parameters. Until it succeeds, the session answers every other
// application method with -32601.
func (d *Dispatcher) initialize(_ context.Context, call *Call) (any, error) {
	p := newParams(call.Params)
	version := p.RequiredString("protocol_version")
	client := p.Nested("client")
	clientName, clientVersion := client.String("name"), client.String("version")
	p.Adopt(client)
	token := p.String("token")
	if err := p.Err(); err != nil {
		return nil, err
	}
	if major(version) != major(ProtocolVersion) {
		return nil, transport.AppError(transport.StringVersionIncompatible, "Unsupported protocol version.").
			WithDetails("the client speaks " + version + "; this server speaks " + ProtocolVersion + " (any 1.x)")
	}
	id, err := d.authenticateConn(call, token)
	if err != nil {
		return nil, err
	}
	info := d.opts.Info
	sid := newSessionID()
	call.Log(zerolog.InfoLevel).Str("session_id", sid).Str("identity", id.Name()).Str("class", string(id.Class())).
		Str("client", clientName).Str("client_version", clientVersion).
		Str("protocol_version", version).Msg("session initialized")
	return &InitializeResult{
		ProtocolVersion:     ProtocolVersion,
		Server:              ServerInfo{Name: info.Name, Version: info.Version},
		SessionID:           sid,
		Identity:            id.Name(),
		MaxMessageSize:      info.MaxMessageSize,
		KeepaliveIntervalMS: info.KeepaliveInterval.Milliseconds(),
		KeepaliveTimeoutMS:  info.KeepaliveTimeout.Milliseconds(),
		Methods:             d.publicMethods(),
	}, nil
}

func major(v string) string {
	m, _, _ := strings.Cut(v, ".")
	return m
}

func newSessionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "s-" + hex.EncodeToString(b[:])
}
