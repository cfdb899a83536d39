package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// allowedSkip is one line of the allowed-skips file.
type allowedSkip struct{ pkg, test, reason string }

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
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want: package test reason", name, n)
		}
		if _, err := path.Match(fields[1], ""); err != nil {
			return nil, fmt.Errorf("%s:%d: test pattern: %w", name, n, err)
		}
		out = append(out, allowedSkip{pkg: fields[0], test: fields[1], reason: strings.Join(fields[2:], " ")})
	}
	return out, sc.Err()
}

func isAllowed(s skip, allowed []allowedSkip) bool {
	for _, a := range allowed {
		if ok, _ := path.Match(a.test, s.test); ok && a.pkg == s.pkg {
			return true
		}
	}
	return false
}
