package main

import (
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
)

// mutations is gremlins v0.6.0's table (internal/engine/mappings.go,
// tokenMutations): for each mutant type, the token it replaces and what
// with. It is copied, not imported, because gremlins keeps it internal;
// TestMutationsMatchGremlins compares the two. The REM_ASSIGN entry of
// INVERT_ASSIGNMENTS maps to itself there too: that mutant changes nothing.
var mutations = map[string]map[token.Token]token.Token{
	"ARITHMETIC_BASE": {
		token.ADD: token.SUB, token.MUL: token.QUO, token.QUO: token.MUL,
		token.REM: token.MUL, token.SUB: token.ADD,
	},
	"CONDITIONALS_BOUNDARY": {
		token.GEQ: token.GTR, token.GTR: token.GEQ, token.LEQ: token.LSS, token.LSS: token.LEQ,
	},
	"CONDITIONALS_NEGATION": {
		token.EQL: token.NEQ, token.GEQ: token.LSS, token.GTR: token.LEQ,
		token.LEQ: token.GTR, token.LSS: token.GEQ, token.NEQ: token.EQL,
	},
	"INCREMENT_DECREMENT": {token.DEC: token.INC, token.INC: token.DEC},
	"INVERT_ASSIGNMENTS": {
		token.ADD_ASSIGN: token.SUB_ASSIGN, token.MUL_ASSIGN: token.QUO_ASSIGN,
		token.QUO_ASSIGN: token.MUL_ASSIGN, token.REM_ASSIGN: token.REM_ASSIGN,
		token.SUB_ASSIGN: token.ADD_ASSIGN,
	},
	"INVERT_BITWISE": {
		token.AND: token.OR, token.OR: token.AND, token.XOR: token.AND,
		token.AND_NOT: token.AND, token.SHL: token.SHR, token.SHR: token.SHL,
	},
	"INVERT_BWASSIGN": {
		token.AND_ASSIGN: token.OR_ASSIGN, token.OR_ASSIGN: token.AND_ASSIGN,
		token.XOR_ASSIGN: token.AND_ASSIGN, token.AND_NOT_ASSIGN: token.AND_ASSIGN,
		token.SHL_ASSIGN: token.SHR_ASSIGN, token.SHR_ASSIGN: token.SHL_ASSIGN,
	},
	"INVERT_LOGICAL":   {token.LAND: token.LOR, token.LOR: token.LAND},
	"INVERT_LOOPCTRL":  {token.BREAK: token.CONTINUE, token.CONTINUE: token.BREAK},
	"INVERT_NEGATIVES": {token.SUB: token.ADD},
	"REMOVE_SELF_ASSIGNMENTS": {
		token.ADD_ASSIGN: token.ASSIGN, token.AND_ASSIGN: token.ASSIGN,
		token.AND_NOT_ASSIGN: token.ASSIGN, token.MUL_ASSIGN: token.ASSIGN,
		token.OR_ASSIGN: token.ASSIGN, token.QUO_ASSIGN: token.ASSIGN,
		token.REM_ASSIGN: token.ASSIGN, token.SHL_ASSIGN: token.ASSIGN,
		token.SHR_ASSIGN: token.ASSIGN, token.SUB_ASSIGN: token.ASSIGN,
		token.XOR_ASSIGN: token.ASSIGN,
	},
}

// ErrStale says the token at a mutant's place is not one its type
// changes: the file was edited since the report was written.
var ErrStale = errors.New("stale")

// Apply returns src with the mutant of type typ at line:col applied: the
// token there replaced as gremlins replaces it. gremlins rewrites the whole
// file with go/printer; only the token is changed here, so that line
// numbers in test failures stay those of the real file.
func Apply(src []byte, typ string, line, col int) ([]byte, error) {
	table, ok := mutations[typ]
	if !ok {
		return nil, fmt.Errorf("apply: unknown mutant type %q", typ)
	}
	tok, lit, off, err := tokenAt(src, line, col)
	if err != nil {
		return nil, err
	}
	to, ok := table[tok]
	if !ok {
		if lit == "" {
			lit = tok.String()
		}
		return nil, fmt.Errorf("%w: the token at %d:%d is %q, which %s does not change", ErrStale, line, col, lit, typ)
	}
	return replace(src, off, tok, to)
}

// tokenAt finds the token that starts at line:col (col counted in bytes
// from 1, as go/token does), its literal text and its byte offset.
func tokenAt(src []byte, line, col int) (token.Token, string, int, error) {
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return 0, "", 0, fmt.Errorf("%w: no token starts at %d:%d", ErrStale, line, col)
		}
		p := file.PositionFor(pos, false)
		if p.Line > line || (p.Line == line && p.Column > col) {
			return 0, "", 0, fmt.Errorf("%w: no token starts at %d:%d", ErrStale, line, col)
		}
		if p.Line == line && p.Column == col && tok != token.SEMICOLON {
			return tok, lit, p.Offset, nil
		}
	}
}

// replace swaps the token at off for to. When the new token would fuse
// with a neighbour ("a+-b" made "a++b"), it is written with spaces around
// it, which Go's grammar ignores.
func replace(src []byte, off int, from, to token.Token) ([]byte, error) {
	end := off + len(from.String())
	for _, pad := range []string{"", " "} {
		out := make([]byte, 0, len(src)+2)
		out = append(out, src[:off]...)
		out = append(out, pad+to.String()+pad...)
		out = append(out, src[end:]...)
		if sameTokensBut(src, out, off+len(pad), to) {
			return out, nil
		}
	}
	return nil, fmt.Errorf("apply: cannot write %q in place of %q at offset %d", to, from, off)
}

// sameTokensBut reports whether mutated scans as the same number of tokens
// as orig with want starting at off: the change did not merge or split
// anything around it.
func sameTokensBut(orig, mutated []byte, off int, want token.Token) bool {
	n, _, _ := scanAll(orig, -1)
	m, got, ok := scanAll(mutated, off)
	return ok && n == m && got == want
}

// scanAll counts the tokens of src, and returns the one starting at off.
func scanAll(src []byte, off int) (int, token.Token, bool) {
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(src))
	var s scanner.Scanner
	errs := 0
	s.Init(file, src, func(token.Position, string) { errs++ }, 0)
	n, at := 0, token.ILLEGAL
	for {
		pos, tok, _ := s.Scan()
		if tok == token.EOF {
			return n, at, errs == 0
		}
		if file.Offset(pos) == off && tok != token.SEMICOLON {
			at = tok
		}
		n++
	}
}
