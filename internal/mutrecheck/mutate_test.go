package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestApplyEveryMutation(t *testing.T) {
	cases := []struct {
		typ, src, want string
	}{
		{"ARITHMETIC_BASE", "x = a + b", "x = a - b"},
		{"ARITHMETIC_BASE", "x = a - b", "x = a + b"},
		{"ARITHMETIC_BASE", "x = a * b", "x = a / b"},
		{"ARITHMETIC_BASE", "x = a / b", "x = a * b"},
		{"ARITHMETIC_BASE", "x = a % b", "x = a * b"},
		{"CONDITIONALS_BOUNDARY", "x = a < b", "x = a <= b"},
		{"CONDITIONALS_BOUNDARY", "x = a <= b", "x = a < b"},
		{"CONDITIONALS_BOUNDARY", "x = a > b", "x = a >= b"},
		{"CONDITIONALS_BOUNDARY", "x = a >= b", "x = a > b"},
		{"CONDITIONALS_NEGATION", "x = a == b", "x = a != b"},
		{"CONDITIONALS_NEGATION", "x = a != b", "x = a == b"},
		{"CONDITIONALS_NEGATION", "x = a < b", "x = a >= b"},
		{"CONDITIONALS_NEGATION", "x = a <= b", "x = a > b"},
		{"CONDITIONALS_NEGATION", "x = a > b", "x = a <= b"},
		{"CONDITIONALS_NEGATION", "x = a >= b", "x = a < b"},
		{"INCREMENT_DECREMENT", "x ++", "x --"},
		{"INCREMENT_DECREMENT", "x --", "x ++"},
		{"INVERT_NEGATIVES", "x = - b", "x = + b"},
		{"INVERT_ASSIGNMENTS", "x += b", "x -= b"},
		{"INVERT_ASSIGNMENTS", "x -= b", "x += b"},
		{"INVERT_ASSIGNMENTS", "x *= b", "x /= b"},
		{"INVERT_ASSIGNMENTS", "x /= b", "x *= b"},
		{"INVERT_ASSIGNMENTS", "x %= b", "x %= b"},
		{"INVERT_BITWISE", "x = a & b", "x = a | b"},
		{"INVERT_BITWISE", "x = a | b", "x = a & b"},
		{"INVERT_BITWISE", "x = a ^ b", "x = a & b"},
		{"INVERT_BITWISE", "x = a &^ b", "x = a & b"},
		{"INVERT_BITWISE", "x = a << b", "x = a >> b"},
		{"INVERT_BITWISE", "x = a >> b", "x = a << b"},
		{"INVERT_BWASSIGN", "x &= b", "x |= b"},
		{"INVERT_BWASSIGN", "x |= b", "x &= b"},
		{"INVERT_BWASSIGN", "x ^= b", "x &= b"},
		{"INVERT_BWASSIGN", "x &^= b", "x &= b"},
		{"INVERT_BWASSIGN", "x <<= b", "x >>= b"},
		{"INVERT_BWASSIGN", "x >>= b", "x <<= b"},
		{"INVERT_LOGICAL", "x = a && b", "x = a || b"},
		{"INVERT_LOGICAL", "x = a || b", "x = a && b"},
		{"INVERT_LOOPCTRL", "break", "continue"},
		{"INVERT_LOOPCTRL", "continue", "break"},
		{"REMOVE_SELF_ASSIGNMENTS", "x += b", "x = b"},
		{"REMOVE_SELF_ASSIGNMENTS", "x &^= b", "x = b"},
		{"REMOVE_SELF_ASSIGNMENTS", "x <<= b", "x = b"},
	}
	for _, c := range cases {
		t.Run(c.typ+" "+c.src, func(t *testing.T) {
			prefix := "package p\n\nfunc f() {\n\t"
			col := 1
			if !strings.HasPrefix(c.src, "break") && !strings.HasPrefix(c.src, "continue") {
				// The operator is the first token after "x " or "x = a ".
				fields := strings.Fields(c.src)
				op := fields[len(fields)-2]
				if len(fields) == 2 {
					op = fields[1]
				}
				col = strings.Index(c.src+" ", " "+op+" ") + 2
			}
			col++ // the tab
			got, err := Apply([]byte(prefix+c.src+"\n}\n"), c.typ, 4, col)
			require.NoError(t, err)
			assert.Equal(t, prefix+c.want+"\n}\n", string(got))
		})
	}
}

func TestApplyKeepsTheRestOfTheFile(t *testing.T) {
	src := "package p\n\n// a < b in a comment\nfunc f(a, b int) bool { return a < b || a < 0 }\n"
	got, err := Apply([]byte(src), "CONDITIONALS_BOUNDARY", 4, 43)
	require.NoError(t, err)
	assert.Equal(t, "package p\n\n// a < b in a comment\nfunc f(a, b int) bool { return a < b || a <= 0 }\n", string(got))
}

// A new token that would fuse with its neighbour is written apart: "a+-b"
// with the minus inverted must not become "a++b".
func TestApplySeparatesFusingTokens(t *testing.T) {
	src := "package p\n\nvar x = a+-b\n"
	got, err := Apply([]byte(src), "INVERT_NEGATIVES", 3, 11)
	require.NoError(t, err)
	assert.Equal(t, "package p\n\nvar x = a+ + b\n", string(got))

	got, err = Apply([]byte("package p\n\nvar x = a*/* c */b\n"), "ARITHMETIC_BASE", 3, 10)
	require.NoError(t, err)
	assert.Equal(t, "package p\n\nvar x = a / /* c */b\n", string(got))
}

func TestApplyStale(t *testing.T) {
	src := []byte("package p\n\nfunc f(a, b int) bool {\n\treturn a < b\n}\n")
	cases := []struct {
		name      string
		typ       string
		line, col int
		msg       string
	}{
		{"wrong token for the type", "ARITHMETIC_BASE", 4, 11, `the token at 4:11 is "<", which ARITHMETIC_BASE does not change`},
		{"an identifier", "CONDITIONALS_NEGATION", 4, 9, `the token at 4:9 is "a"`},
		{"inside a token", "CONDITIONALS_NEGATION", 4, 4, "no token starts at 4:4"},
		{"in white space", "CONDITIONALS_NEGATION", 4, 10, "no token starts at 4:10"},
		{"past the line's end", "CONDITIONALS_NEGATION", 4, 40, "no token starts at 4:40"},
		{"past the file's end", "CONDITIONALS_NEGATION", 90, 1, "no token starts at 90:1"},
		{"the line moved", "CONDITIONALS_NEGATION", 3, 11, `the token at 3:11 is "b"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Apply(src, c.typ, c.line, c.col)
			require.ErrorIs(t, err, ErrStale)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
	_, err := Apply(src, "SWAP_EVERYTHING", 4, 11)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrStale)
	assert.Contains(t, err.Error(), `unknown mutant type "SWAP_EVERYTHING"`)
}

// gremlinsNames maps the identifiers of gremlins' mappings.go to what
// its report writes and to go/token's tokens.
var (
	gremlinsTypes = map[string]string{
		"ArithmeticBase": "ARITHMETIC_BASE", "ConditionalsBoundary": "CONDITIONALS_BOUNDARY",
		"ConditionalsNegation": "CONDITIONALS_NEGATION", "IncrementDecrement": "INCREMENT_DECREMENT",
		"InvertAssignments": "INVERT_ASSIGNMENTS", "InvertBitwise": "INVERT_BITWISE",
		"InvertBitwiseAssignments": "INVERT_BWASSIGN", "InvertLogical": "INVERT_LOGICAL",
		"InvertLoopCtrl": "INVERT_LOOPCTRL", "InvertNegatives": "INVERT_NEGATIVES",
		"RemoveSelfAssignments": "REMOVE_SELF_ASSIGNMENTS",
	}
	tokenNames = map[string]token.Token{}
)

func init() {
	for tok := token.ILLEGAL; tok <= token.TILDE; tok++ {
		// go/token has no name table; the operators' Go names are these.
		names := map[string]string{
			"+": "ADD", "-": "SUB", "*": "MUL", "/": "QUO", "%": "REM", "&": "AND", "|": "OR",
			"^": "XOR", "<<": "SHL", ">>": "SHR", "&^": "AND_NOT", "+=": "ADD_ASSIGN",
			"-=": "SUB_ASSIGN", "*=": "MUL_ASSIGN", "/=": "QUO_ASSIGN", "%=": "REM_ASSIGN",
			"&=": "AND_ASSIGN", "|=": "OR_ASSIGN", "^=": "XOR_ASSIGN", "<<=": "SHL_ASSIGN",
			">>=": "SHR_ASSIGN", "&^=": "AND_NOT_ASSIGN", "&&": "LAND", "||": "LOR", "++": "INC",
			"--": "DEC", "==": "EQL", "<": "LSS", ">": "GTR", "=": "ASSIGN", "!=": "NEQ",
			"<=": "LEQ", ">=": "GEQ", "break": "BREAK", "continue": "CONTINUE",
		}
		if n, ok := names[tok.String()]; ok {
			tokenNames[n] = tok
		}
	}
}

// TestMutationsMatchGremlins reads the table from the pinned gremlins
// source in the module cache, so that a gremlins upgrade that changes a
// mutation fails here rather than making re-checks quietly differ.
func TestMutationsMatchGremlins(t *testing.T) {
	dir := gremlinsDir(t)
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "internal/engine/mappings.go"), nil, 0)
	require.NoError(t, err)
	theirs := map[string]map[token.Token]token.Token{}
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || spec.Names[0].Name != "tokenMutations" {
			return true
		}
		for _, e := range spec.Values[0].(*ast.CompositeLit).Elts {
			kv := e.(*ast.KeyValueExpr)
			typ := gremlinsTypes[kv.Key.(*ast.SelectorExpr).Sel.Name]
			require.NotEmpty(t, typ, "a mutant type this test does not know")
			theirs[typ] = map[token.Token]token.Token{}
			for _, pair := range kv.Value.(*ast.CompositeLit).Elts {
				p := pair.(*ast.KeyValueExpr)
				from, to := tokenNames[p.Key.(*ast.SelectorExpr).Sel.Name], tokenNames[p.Value.(*ast.SelectorExpr).Sel.Name]
				theirs[typ][from] = to
			}
		}
		return false
	})
	assert.Equal(t, theirs, mutations)
}

// gremlinsDir is the pinned gremlins module's source directory. go mod
// download fetches it when the module cache lacks it (a fresh machine):
// go list -m would only say where it is, and nothing else in the tests
// builds it.
func gremlinsDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/go-gremlins/gremlins").Output()
	require.NoError(t, err, "go mod download github.com/go-gremlins/gremlins: %s", out)
	var mod struct{ Dir, Error string }
	require.NoError(t, json.Unmarshal(out, &mod))
	require.Empty(t, mod.Error)
	require.NotEmpty(t, mod.Dir)
	return mod.Dir
}
