package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/skillgate/skillgate/dispatch/auth"
	"github.com/skillgate/skillgate/transport"
)

// MethodInitialize initializes a framed connection.
const MethodInitialize = "Initialize"

// ResponseTooLargeHint tells a client whose answer did not fit the message
// size limit how to ask for less; both front doors end RESPONSE_TOO_LARGE
// details with it.
const ResponseTooLargeHint = "request less data (for example read_blob with mode sample_head and max_bytes)"

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
	Limits              Limits     `json:"limits"`
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
	if err := checkVersion(version, d.opts.UpgradeURL); err != nil {
		return nil, err
	}
	id, err := d.establish(call, token)
	if err != nil {
		return nil, err
	}
	info := d.opts.Info
	sid := newSessionID()
	call.Log(zerolog.InfoLevel).Str("session_id", sid).Str("identity", id.Name()).Str("class", string(id.Class())).
		Str("client", logCut(clientName)).Str("client_version", logCut(clientVersion)).
		Str("protocol_version", version).Msg("session initialized")
	return &InitializeResult{
		ProtocolVersion:     ProtocolVersion,
		Server:              ServerInfo{Name: info.Name, Version: info.Version},
		SessionID:           sid,
		Identity:            id.Name(),
		MaxMessageSize:      info.MaxMessageSize,
		KeepaliveIntervalMS: info.KeepaliveInterval.Milliseconds(),
		KeepaliveTimeoutMS:  info.KeepaliveTimeout.Milliseconds(),
		Methods:             d.methodsFor(id),
		Limits:              info.Limits,
	}, nil
}

// checkVersion accepts "<major>.<minor>" in digits, with the server's
// major version. A refusal carries the error classes' details of
// VERSION_INCOMPATIBLE as data members: the version asked for
// (descriptor_version), the range served (consumer_supported_range) and,
// when the operator set one, upgrade_url.
func checkVersion(v, upgradeURL string) error {
	major, minor, ok := strings.Cut(v, ".")
	if !ok || !allDigits(major) || !allDigits(minor) {
		return &ParamError{Param: "protocol_version", Reason: "must be <major>.<minor> in digits, such as " + ProtocolVersion + "; got " + quoteCut(v)}
	}
	if want, _, _ := strings.Cut(ProtocolVersion, "."); major != want {
		e := transport.AppError(StringVersionIncompatible, "Unsupported protocol version.").
			WithDetails("the client speaks " + v + "; this server speaks " + ProtocolVersion + " (any " + want + ".x)")
		return withData(e, map[string]any{"descriptor_version": v, "consumer_supported_range": want + ".x"},
			"upgrade_url", upgradeURL)
	}
	return nil
}

func allDigits(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// maxLoggedName bounds client-chosen strings in log lines: a client must
// not be able to write megabytes into the logs with one Initialize.
const maxLoggedName = 128

// logCut returns s cut to maxLoggedName bytes (on a character boundary),
// marked when cut.
func logCut(s string) string {
	if len(s) <= maxLoggedName {
		return s
	}
	cut := maxLoggedName
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[" + strconv.Itoa(len(s)) + " bytes]"
}

func quoteCut(s string) string { return strconv.Quote(logCut(s)) }

func newSessionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "s-" + hex.EncodeToString(b[:])
}

// methodsFor lists the application methods id may call after Initialize,
// under every name they answer to (canonical and CamelCase), sorted.
func (d *Dispatcher) methodsFor(id *auth.Identity) []string {
	var names []string
	for name, m := range d.methods {
		if m.name != MethodInitialize && id.AllowsMethod(m.name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
