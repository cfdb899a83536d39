package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"unicode/utf8"
)

// Default per-skill limits (the MCP skills extension's numbers).
const (
	DefaultMaxSkillFiles       = 512
	DefaultMaxSkillBytes int64 = 16 << 20
)

// FileInfo describes one file of a skill snapshot.
type FileInfo struct {
	// Path is slash-separated and relative to the skill folder.
	Path   string `json:"path"`
	Size   int64  `json:"size_bytes"`
	SHA256 string `json:"sha256"` // lowercase hex
}

// File is a snapshot file with its content. Data is shared with the
// snapshot and must not be modified.
type File struct {
	FileInfo
	Data []byte
}

type limits struct {
	maxFiles int
	maxBytes int64
}

// snapshot is the in-memory copy of a package folder.
type snapshot struct {
	files   []File            // sorted by path
	refused map[string]string // skipped symlinks: path -> reason
	total   int64
	// stopped: a limit ended the walk, so files may be missing unread.
	stopped bool
	// violations make the package invalid (limits); warnings do not.
	violations []Violation
	warnings   []Violation
}

// ignoredName reports names the loader never reads or watches: hidden
// files and folders (.git, editor swap files), editor backups ending in
// "~" and Python byte-code caches.
func ignoredName(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") || name == "__pycache__"
}

// readSnapshot copies every regular file under fsys into memory with its
// size and sha256. A symlink is served with its target's content when the
// target is a regular file inside the package (fsys from os.Root refuses
// anything else); other symlinks are skipped with a warning and their paths
// refused by ReadFile. Exceeding lim stops the walk with a violation.
func readSnapshot(fsys fs.FS, lim limits) *snapshot {
	s := &snapshot{refused: map[string]string{}}
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			s.warn(p, "a readable file or folder", err.Error(), "skipped: %v", err)
			return nil
		}
		if p == "." {
			return nil
		}
		if ignoredName(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !utf8.ValidString(p) || strings.ContainsRune(p, '\\') {
			s.warn(p, "a UTF-8 file name without backslashes", p, "skipped: unusable file name")
			return skipIfDir(d)
		}
		if d.IsDir() {
			return nil
		}
		return s.addEntry(fsys, p, d, lim)
	})
	slices.SortFunc(s.files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return s
}

func skipIfDir(d fs.DirEntry) error {
	if d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

// addEntry reads one non-directory entry; it returns fs.SkipAll once a
// limit is passed.
func (s *snapshot) addEntry(fsys fs.FS, p string, d fs.DirEntry, lim limits) error {
	if d.Type()&fs.ModeSymlink != 0 {
		fi, err := fs.Stat(fsys, p)
		switch {
		case err != nil:
			return s.refuse(p, "target outside the package or missing")
		case fi.IsDir():
			return s.refuse(p, "symlink to a folder is not followed")
		case !fi.Mode().IsRegular():
			return s.refuse(p, "target is not a regular file")
		}
	} else if !d.Type().IsRegular() {
		s.warn(p, "a regular file", d.Type().String(), "skipped: not a regular file")
		return nil
	}
	if len(s.files) >= lim.maxFiles {
		s.violate("/files", fmt.Sprintf("at most %d files", lim.maxFiles), len(s.files)+1, "too many files in the package")
		return fs.SkipAll
	}
	f, err := readLimited(fsys, p, lim.maxBytes-s.total)
	if errors.Is(err, errSnapshotTooLarge) {
		s.violate("/size_bytes", fmt.Sprintf("at most %d bytes in total", lim.maxBytes), fmt.Sprintf("more than %d", lim.maxBytes), "package too large")
		return fs.SkipAll
	}
	if err != nil {
		s.warn(p, "a readable file", err.Error(), "skipped: %v", err)
		return nil
	}
	s.total += f.Size
	s.files = append(s.files, f)
	return nil
}

var errSnapshotTooLarge = errors.New("snapshot size limit")

// readLimited reads p whole, hashing it, failing once it passes budget.
func readLimited(fsys fs.FS, p string, budget int64) (File, error) {
	fh, err := fsys.Open(p)
	if err != nil {
		return File{}, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, budget+1))
	if err != nil {
		return File{}, err
	}
	if int64(len(data)) > budget {
		return File{}, errSnapshotTooLarge
	}
	sum := sha256.Sum256(data)
	return File{FileInfo: FileInfo{Path: p, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, Data: data}, nil
}

func (s *snapshot) refuse(p, reason string) error {
	s.refused[p] = reason
	s.warn(p, "a symlink to a regular file inside the package", reason, "symlink skipped: %s", reason)
	return nil
}

func (s *snapshot) warn(file, expected string, actual any, format string, args ...any) {
	s.warnings = append(s.warnings, Violation{File: file, Expected: expected, Actual: actual, Message: fmt.Sprintf(format, args...)})
}

func (s *snapshot) violate(field, expected string, actual any, msg string) {
	s.stopped = true
	s.violations = append(s.violations, Violation{Field: field, Expected: expected, Actual: actual, Message: msg})
}

// searchFiles finds the clean path p in files sorted by path.
func searchFiles(files []File, p string) (File, bool) {
	i, ok := slices.BinarySearchFunc(files, p, func(f File, p string) int { return strings.Compare(f.Path, p) })
	if !ok {
		return File{}, false
	}
	return files[i], true
}

// digest hashes the sorted (path, sha256) list: equal digests mean equal
// snapshots.
func (s *snapshot) digest() string {
	h := sha256.New()
	for _, f := range s.files {
		fmt.Fprintf(h, "%s\x00%s\n", f.Path, f.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}
