package sandbox

import (
	"fmt"
	"strings"
)

// ZygoteMode says how sandboxes are started.
type ZygoteMode string

const (
	// ZygoteAuto uses the template when it passes the start-up self-check
	// and falls back to starting each sandbox from scratch otherwise.
	ZygoteAuto ZygoteMode = "auto"
	// ZygoteOn requires the template: New fails when it does not work.
	ZygoteOn ZygoteMode = "on"
	// ZygoteOff starts every sandbox from scratch: the gateway binary
	// re-executed as pid 1, then a new interpreter.
	ZygoteOff ZygoteMode = "off"
)

// ParseZygoteMode parses "auto", "on" or "off"; "" means auto.
func ParseZygoteMode(s string) (ZygoteMode, error) {
	switch m := ZygoteMode(strings.TrimSpace(s)); m {
	case "":
		return ZygoteAuto, nil
	case ZygoteAuto, ZygoteOn, ZygoteOff:
		return m, nil
	}
	return "", fmt.Errorf("%w: zygote mode %q: want auto, on or off", errInvalidConfig, s)
}
