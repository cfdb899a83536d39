package skills

import (
	"fmt"
	"strconv"
	"strings"
)

// maxVersionLen bounds the input of ParseVersion; skill versions are short.
const maxVersionLen = 128

// Version is a parsed semantic version 2.0.0 (https://semver.org).
// The zero value is 0.0.0.
type Version struct {
	Major, Minor, Patch uint64
	// Pre holds the dot-separated pre-release identifiers, nil for a release.
	Pre []string
	// Build holds the build metadata after "+", without the "+".
	// It takes no part in precedence.
	Build string
}

// ParseVersion parses s strictly as MAJOR.MINOR.PATCH[-PRE][+BUILD]: no "v"
// prefix, no leading zeros in numeric parts, no empty identifiers, numbers
// that fit in a uint64, at most 128 bytes. Errors wrap ErrInvalidVersion.
func ParseVersion(s string) (Version, error) {
	if len(s) > maxVersionLen {
		return Version{}, fmt.Errorf("parse version: longer than %d bytes: %w", maxVersionLen, ErrInvalidVersion)
	}
	var v Version
	rest := s
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		v.Build = rest[i+1:]
		if err := checkIdentifiers(v.Build, false); err != nil {
			return Version{}, fmt.Errorf("parse version %q: build metadata: %w", s, err)
		}
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		pre := rest[i+1:]
		if err := checkIdentifiers(pre, true); err != nil {
			return Version{}, fmt.Errorf("parse version %q: pre-release: %w", s, err)
		}
		v.Pre = strings.Split(pre, ".")
		rest = rest[:i]
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("parse version %q: want MAJOR.MINOR.PATCH: %w", s, ErrInvalidVersion)
	}
	nums := [3]*uint64{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		n, err := parseNumeric(p)
		if err != nil {
			return Version{}, fmt.Errorf("parse version %q: %w", s, err)
		}
		*nums[i] = n
	}
	return v, nil
}

// parseNumeric parses a numeric identifier: digits only, no leading zero.
func parseNumeric(p string) (uint64, error) {
	if p == "" || !isDigits(p) {
		return 0, fmt.Errorf("%q is not a number: %w", p, ErrInvalidVersion)
	}
	if len(p) > 1 && p[0] == '0' {
		return 0, fmt.Errorf("%q has a leading zero: %w", p, ErrInvalidVersion)
	}
	n, err := strconv.ParseUint(p, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is out of range: %w", p, ErrInvalidVersion)
	}
	return n, nil
}

// checkIdentifiers validates dot-separated identifiers of [0-9A-Za-z-];
// numeric pre-release identifiers must not have leading zeros.
func checkIdentifiers(s string, pre bool) error {
	for id := range strings.SplitSeq(s, ".") {
		if id == "" {
			return fmt.Errorf("empty identifier: %w", ErrInvalidVersion)
		}
		for i := 0; i < len(id); i++ {
			if !isIdentChar(id[i]) {
				return fmt.Errorf("identifier %q has a character outside [0-9A-Za-z-]: %w", id, ErrInvalidVersion)
			}
		}
		if pre && isDigits(id) && len(id) > 1 && id[0] == '0' {
			return fmt.Errorf("numeric identifier %q has a leading zero: %w", id, ErrInvalidVersion)
		}
	}
	return nil
}

func isIdentChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-'
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// String formats v canonically; for a parsed version it returns the input.
func (v Version) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Pre) > 0 {
		b.WriteByte('-')
		b.WriteString(strings.Join(v.Pre, "."))
	}
	if v.Build != "" {
		b.WriteByte('+')
		b.WriteString(v.Build)
	}
	return b.String()
}

// IsPrerelease reports whether v carries pre-release identifiers.
func (v Version) IsPrerelease() bool { return len(v.Pre) > 0 }

// Compare returns -1, 0 or +1 as v has lower, equal or higher precedence
// than w (semver §11): numeric core first, then a pre-release ranks below
// the release, identifiers compared one by one. Build metadata is ignored.
func (v Version) Compare(w Version) int {
	for _, d := range [3][2]uint64{{v.Major, w.Major}, {v.Minor, w.Minor}, {v.Patch, w.Patch}} {
		if c := cmpUint(d[0], d[1]); c != 0 {
			return c
		}
	}
	switch {
	case len(v.Pre) == 0 && len(w.Pre) == 0:
		return 0
	case len(v.Pre) == 0:
		return 1
	case len(w.Pre) == 0:
		return -1
	}
	for i := 0; i < len(v.Pre) && i < len(w.Pre); i++ {
		if c := comparePreIdent(v.Pre[i], w.Pre[i]); c != 0 {
			return c
		}
	}
	return cmpUint(uint64(len(v.Pre)), uint64(len(w.Pre)))
}

// comparePreIdent orders numeric identifiers numerically (below any
// alphanumeric one) and others in ASCII order. Numeric identifiers have no
// leading zeros, so comparing length then bytes is numeric order at any size.
func comparePreIdent(a, b string) int {
	an, bn := isDigits(a), isDigits(b)
	switch {
	case an && bn:
		if c := cmpUint(uint64(len(a)), uint64(len(b))); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
