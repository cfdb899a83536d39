package pyenv

import (
	"slices"
	"strings"
)

// markerVariables are PEP 508's environment marker variables.
var markerVariables = []string{
	"python_version", "python_full_version", "os_name", "sys_platform", "platform_release",
	"platform_system", "platform_version", "platform_machine", "platform_python_implementation",
	"implementation_name", "implementation_version", "extra",
	// Legacy spellings pip still evaluates.
	"os.name", "sys.platform", "platform.version", "platform.machine", "platform.python_implementation",
}

var markerOps = []string{"===", "==", "!=", "<=", ">=", "~=", "<", ">"}

// parseMarker checks an environment marker against PEP 508's grammar and
// returns it with its whitespace normalized (tokens one space apart), so
// that spacing does not change an environment's content address.
func parseMarker(s string) (string, error) {
	toks, err := markerTokens(s)
	if err != nil {
		return "", err
	}
	if len(toks) == 0 {
		return "", invalid("empty environment marker after ;")
	}
	p := &markerParser{toks: toks}
	if err := p.or(0); err != nil {
		return "", err
	}
	if p.i != len(toks) {
		return "", invalid("environment marker: unexpected %q", clip(toks[p.i]))
	}
	return strings.Join(toks, " "), nil
}

func markerTokens(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '(' || c == ')':
			toks = append(toks, s[i:i+1])
			i++
		case c == '\'' || c == '"':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, invalid("environment marker: unterminated string")
			}
			toks = append(toks, s[i:i+end+2])
			i += end + 2
		case strings.IndexByte("=!<>~", c) >= 0:
			op := ""
			for _, o := range markerOps {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, invalid("environment marker: bad operator at byte %d", i)
			}
			toks = append(toks, op)
			i += len(op)
		case isMarkerWordByte(c):
			j := i
			for j < len(s) && isMarkerWordByte(s[j]) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			return nil, invalid("environment marker: unexpected character %q", string(rune(c)))
		}
		if len(toks) > 256 {
			return nil, invalid("environment marker too long")
		}
	}
	return toks, nil
}

func isMarkerWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

type markerParser struct {
	toks []string
	i    int
}

func (p *markerParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

// or: and ("or" and)*; depth bounds nesting so hostile input cannot
// exhaust the stack.
func (p *markerParser) or(depth int) error {
	if depth > 32 {
		return invalid("environment marker nested too deeply")
	}
	for {
		if err := p.and(depth); err != nil {
			return err
		}
		if p.peek() != "or" {
			return nil
		}
		p.i++
	}
}

func (p *markerParser) and(depth int) error {
	for {
		if err := p.expr(depth); err != nil {
			return err
		}
		if p.peek() != "and" {
			return nil
		}
		p.i++
	}
}

func (p *markerParser) expr(depth int) error {
	if p.peek() == "(" {
		p.i++
		if err := p.or(depth + 1); err != nil {
			return err
		}
		if p.peek() != ")" {
			return invalid("environment marker: ( without )")
		}
		p.i++
		return nil
	}
	if err := p.value(); err != nil {
		return err
	}
	switch t := p.peek(); {
	case slices.Contains(markerOps, t) || t == "in":
		p.i++
	case t == "not" && p.i+1 < len(p.toks) && p.toks[p.i+1] == "in":
		p.i += 2
	default:
		return invalid("environment marker: expected a comparison operator, got %q", clip(t))
	}
	return p.value()
}

func (p *markerParser) value() error {
	t := p.peek()
	switch {
	case t == "":
		return invalid("environment marker ends early")
	case t[0] == '\'' || t[0] == '"' || slices.Contains(markerVariables, t):
		p.i++
		return nil
	}
	return invalid("environment marker: %q is neither a quoted string nor a marker variable", clip(t))
}
