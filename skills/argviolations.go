package skills

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// maxActualJSON bounds an object or array quoted whole as a violation's
// actual value; a larger one is described instead, so that one huge
// argument cannot make the answer huge.
const maxActualJSON = 200

// unitViolations turns one failed schema keyword into violations. A
// missing required property and an extra property each get their own,
// pointing at the property, so that every field is named.
func unitViolations(root any, u jsonschema.OutputUnit) []Violation {
	loc := u.InstanceLocation
	msg := u.Error.String()
	switch k := u.Error.Kind.(type) {
	case *kind.Required:
		out := make([]Violation, 0, len(k.Missing))
		for _, p := range k.Missing {
			out = append(out, Violation{Field: loc + "/" + escapePointer(p), Expected: "a value (the property is required)",
				Message: "required property " + strconv.Quote(p) + " is missing"})
		}
		return out
	case *kind.AdditionalProperties:
		out := make([]Violation, 0, len(k.Properties))
		for _, p := range k.Properties {
			f := loc + "/" + escapePointer(p)
			out = append(out, Violation{Field: f, Expected: "no such property (the schema allows no others)",
				Actual: actualOf(lookupPointer(root, f)), Message: "property " + strconv.Quote(p) + " is not allowed"})
		}
		return out
	}
	return []Violation{{Field: loc, Expected: expectedOf(u), Actual: actualOf(lookupPointer(root, loc)), Message: msg}}
}

// expectedOf says what the failed keyword wants, in words where the kind
// is a common one, else by the keyword's location in the schema.
func expectedOf(u jsonschema.OutputUnit) string {
	switch k := u.Error.Kind.(type) {
	case *kind.Type:
		return strings.Join(k.Want, " or ")
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = compactJSON(w)
		}
		return "one of: " + strings.Join(want, ", ")
	case *kind.Const:
		return compactJSON(k.Want)
	case *kind.Format:
		return "a string in format " + strconv.Quote(k.Want)
	case *kind.Pattern:
		return "a string matching " + strconv.Quote(k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("a string of at least %d characters", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("a string of at most %d characters", k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("an array of at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("an array of at most %d items", k.Want)
	case *kind.MinProperties:
		return fmt.Sprintf("an object of at least %d properties", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("an object of at most %d properties", k.Want)
	case *kind.Minimum:
		return "a number >= " + ratString(k.Want)
	case *kind.Maximum:
		return "a number <= " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "a number > " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "a number < " + ratString(k.Want)
	case *kind.MultipleOf:
		return "a multiple of " + ratString(k.Want)
	}
	return "a value satisfying the schema at " + u.KeywordLocation
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	return r.FloatString(6)
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// actualOf is a value as a violation quotes it: scalars as they are
// (long strings cut), objects and arrays whole when small, else described.
func actualOf(v any) any {
	switch x := v.(type) {
	case map[string]any, []any:
		if b, err := json.Marshal(x); err == nil && len(b) <= maxActualJSON {
			return json.RawMessage(b)
		}
		if m, ok := x.(map[string]any); ok {
			return fmt.Sprintf("an object of %d properties", len(m))
		}
		return fmt.Sprintf("an array of %d items", len(x.([]any)))
	}
	return clipActual(v)
}

// lookupPointer finds the value at a JSON pointer in a decoded document;
// nil when there is none.
func lookupPointer(root any, ptr string) any {
	if ptr == "" {
		return root
	}
	cur := root
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
