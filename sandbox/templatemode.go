package sandbox

import (
	"fmt"
	"strings"
)

// TemplateMode says how sandboxes are started.
type TemplateMode string

const (
	// TemplateAuto uses the template when it passes the start-up self-check
	// and falls back to starting each sandbox from scratch otherwise.
	TemplateAuto TemplateMode = "auto"
	// TemplateOn requires the template: New fails when it does not work.
	TemplateOn TemplateMode = "on"
	// TemplateOff starts every sandbox from scratch: the gateway binary
	// re-executed as pid 1, then a new interpreter.
	TemplateOff TemplateMode = "off"
)

// ParseTemplateMode parses "auto", "on" or "off"; "" means auto.
func ParseTemplateMode(s string) (TemplateMode, error) {
	switch m := TemplateMode(strings.TrimSpace(s)); m {
	case "":
		return TemplateAuto, nil
	case TemplateAuto, TemplateOn, TemplateOff:
		return m, nil
	}
	return "", fmt.Errorf("%w: template mode %q: want auto, on or off", errInvalidConfig, s)
}
