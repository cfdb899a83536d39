package egress

import (
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// Retry hint of an unreachable destination, spec 004's for
// ENDPOINT_UNREACHABLE: the destination may answer again shortly.
const (
	unreachableDelayMS  = 2000
	unreachableAttempts = 5
)

// answer tells the run why its connection goes no further: a 502 in
// spec 004's error shape when an allowed destination could not be
// reached, a 431 for a request header past the limit, and otherwise a
// 403 whose body names the rule.
func answer(c net.Conn, st *conn) {
	status, ctype, body := "403 Forbidden", "text/plain; charset=utf-8", st.line()
	switch st.reason {
	case ReasonHeaderTooLarge:
		status = "431 Request Header Fields Too Large"
	case ReasonDial:
		status, ctype, body = "502 Bad Gateway", "application/json", unreachableBody(st)
	}
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, ctype, len(body), body)
}

// line is the refusal as the run's logs and the 403 body give it.
func (st *conn) line() string {
	verb := "denied"
	if st.reason == ReasonDial {
		verb = "unreachable"
	}
	return fmt.Sprintf("egress %s: %s (%s)\n", verb, st.target(), st.why())
}

type unreachableError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details struct {
			EndpointURL string `json:"endpoint_url"`
			Reason      string `json:"reason"`
		} `json:"details"`
		Retry struct {
			SuggestedDelayMS int `json:"suggested_delay_ms"`
			MaxAttempts      int `json:"max_attempts"`
		} `json:"retry"`
	} `json:"error"`
}

func unreachableBody(st *conn) string {
	var e unreachableError
	e.Error.Code = "ENDPOINT_UNREACHABLE"
	e.Error.Message = "egress: cannot connect to " + st.target()
	e.Error.Details.EndpointURL, e.Error.Details.Reason = st.endpoint, st.detail
	e.Error.Retry.SuggestedDelayMS, e.Error.Retry.MaxAttempts = unreachableDelayMS, unreachableAttempts
	b, _ := json.Marshal(&e) // cannot fail: strings and ints
	return string(b) + "\n"
}
