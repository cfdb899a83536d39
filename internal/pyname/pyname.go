// Package pyname holds the facts about Python names that more than one
// package checks: the skill loader (skill and module names that must be
// importable), the dispatcher (a run's entrypoint) and the sandbox (the
// job it is handed). Keeping them here lets each check them without
// depending on the others.
package pyname

// keywords are the hard keywords of Python 3: they cannot be module or
// attribute names, so a name using one could never be imported or called.
var keywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true,
	"assert": true, "async": true, "await": true, "break": true, "class": true,
	"continue": true, "def": true, "del": true, "elif": true, "else": true,
	"except": true, "finally": true, "for": true, "from": true, "global": true,
	"if": true, "import": true, "in": true, "is": true, "lambda": true,
	"nonlocal": true, "not": true, "or": true, "pass": true, "raise": true,
	"return": true, "try": true, "while": true, "with": true, "yield": true,
}

// IsKeyword reports whether s is a hard keyword of Python 3.
func IsKeyword(s string) bool { return keywords[s] }

// IsIdentifier accepts ASCII identifiers [A-Za-z_][A-Za-z0-9_]* that are
// not keywords. Python allows Unicode identifiers too; skill code and the
// names the gateway passes stay ASCII so that they print and log plainly.
func IsIdentifier(s string) bool {
	if s == "" || keywords[s] {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
