package pyenv

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ReadInstalled lists the distributions installed in dir (pip --target
// layout) from the Name and Version headers of each *.dist-info/METADATA,
// sorted by normalized name. Unreadable entries are left out.
func ReadInstalled(dir string) []Dist {
	matches, _ := filepath.Glob(filepath.Join(dir, "*.dist-info", "METADATA"))
	out := make([]Dist, 0, len(matches))
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		if d, ok := parseMetadata(data); ok {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b Dist) int { return strings.Compare(NormalizeName(a.Name), NormalizeName(b.Name)) })
	return out
}

// parseMetadata reads the header block of a core metadata file.
func parseMetadata(data []byte) (Dist, bool) {
	var d Dist
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break // the body starts
		}
		if v, ok := strings.CutPrefix(line, "Name:"); ok && d.Name == "" {
			d.Name = strings.TrimSpace(v)
		} else if v, ok := strings.CutPrefix(line, "Version:"); ok && d.Version == "" {
			d.Version = strings.TrimSpace(v)
		}
	}
	return d, d.Name != "" && d.Version != ""
}
