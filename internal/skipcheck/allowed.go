package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
)

// allowedSkip is one line of the allowed-skips file. stages, when not
// empty, are the only stages (skipcheck -stage) in which the skip is
// allowed: a test that skips as root because it needs an unprivileged
// user must not skip in the stage that runs it as one.
type allowedSkip struct {
	pkg, test string
	stages    []string
	reason    string
}

func readAllowed(name string) ([]allowedSkip, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseAllowed(f, name)
}

func parseAllowed(f io.Reader, name string) ([]allowedSkip, error) {
	var out []allowedSkip
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		var stages []string
		if len(fields) >= 3 && strings.HasPrefix(fields[2], "@") {
			var err error
			if stages, err = parseStages(fields[2]); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, n, err)
			}
			fields = slices.Delete(fields, 2, 3)
		}
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want: package test [@stage,...] reason", name, n)
		}
		if _, err := path.Match(fields[1], ""); err != nil {
			return nil, fmt.Errorf("%s:%d: test pattern: %w", name, n, err)
		}
		out = append(out, allowedSkip{pkg: fields[0], test: fields[1], stages: stages, reason: strings.Join(fields[2:], " ")})
	}
	return out, sc.Err()
}

// parseStages reads "@unit,scratch": stage names of lower-case letters,
// digits and dashes, as the Makefile's targets are named.
func parseStages(field string) ([]string, error) {
	stages := strings.Split(strings.TrimPrefix(field, "@"), ",")
	for _, s := range stages {
		if !validStage(s) {
			return nil, fmt.Errorf("stage %q in %q: want @name[,name...] of a-z, 0-9 and -", s, field)
		}
	}
	return stages, nil
}

func validStage(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// isAllowed: an entry without stages allows the skip in every stage, one
// with stages only in those.
func isAllowed(s skip, allowed []allowedSkip, stage string) bool {
	for _, a := range allowed {
		if ok, _ := path.Match(a.test, s.test); !ok || a.pkg != s.pkg {
			continue
		}
		if len(a.stages) == 0 || slices.Contains(a.stages, stage) {
			return true
		}
	}
	return false
}
