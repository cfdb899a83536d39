// Package pyenvtest writes the small Python distributions that tests of
// environments install: real wheels (zip files pip accepts) and source
// distributions, made on the spot so that no test needs a package index.
package pyenvtest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Wheel describes a pure-Python wheel of one top-level package.
type Wheel struct {
	// Name is the distribution name ("acme-tool"); the package is the
	// name with "-" as "_" ("acme_tool").
	Name    string
	Version string
	// Requires are Requires-Dist entries (PEP 508 strings).
	Requires []string
	// Files are extra files of the package, by path inside it.
	Files map[string]string
}

// Package is the import name of the wheel's package.
func (w Wheel) Package() string { return strings.ReplaceAll(strings.ToLower(w.Name), "-", "_") }

// FileName is the wheel's file name (py3-none-any).
func (w Wheel) FileName() string {
	return fmt.Sprintf("%s-%s-py3-none-any.whl", w.Package(), w.Version)
}

// Bytes builds the wheel: the package's __init__.py sets __version__,
// and the dist-info holds METADATA, WHEEL and a RECORD with every file's
// hash, as pip checks.
func (w Wheel) Bytes() []byte {
	pkg := w.Package()
	info := fmt.Sprintf("%s-%s.dist-info", pkg, w.Version)
	files := [][2]string{{pkg + "/__init__.py", fmt.Sprintf("__version__ = %q\nNAME = %q\n", w.Version, w.Name)}}
	for p, data := range w.Files {
		files = append(files, [2]string{pkg + "/" + p, data})
	}
	meta := fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: test package\n", w.Name, w.Version)
	for _, r := range w.Requires {
		meta += "Requires-Dist: " + r + "\n"
	}
	files = append(files,
		[2]string{info + "/METADATA", meta},
		[2]string{info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: pyenvtest\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	)
	var record strings.Builder
	for _, f := range files {
		sum := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(f[1]))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", info)
	files = append(files, [2]string{info + "/RECORD", record.String()})
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		fw, err := zw.Create(f[0])
		if err != nil {
			panic(err)
		}
		_, _ = fw.Write([]byte(f[1]))
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// Write puts the wheel into dir and returns its path and sha256 (hex).
func (w Wheel) Write(dir string) (string, string, error) {
	data := w.Bytes()
	p := filepath.Join(dir, w.FileName())
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(data)
	return p, hex.EncodeToString(sum[:]), nil
}

// WriteSdist puts a source distribution NAME-VERSION.tar.gz into dir: a
// setup.py that would write a marker file if anything ran it.
func WriteSdist(dir, name, version string) (string, error) {
	base := fmt.Sprintf("%s-%s", name, version)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	pkg := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	for p, data := range map[string]string{
		"setup.py":           fmt.Sprintf("open('/tmp/sdist-built-%s', 'w').close()\nfrom setuptools import setup\nsetup(name=%q, version=%q, packages=[%q])\n", name, name, version, pkg),
		"PKG-INFO":           fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n", name, version),
		pkg + "/__init__.py": fmt.Sprintf("__version__ = %q\n", version),
	} {
		if err := tw.WriteHeader(&tar.Header{Name: base + "/" + p, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return "", err
		}
		_, _ = tw.Write([]byte(data))
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	p := filepath.Join(dir, base+".tar.gz")
	return p, os.WriteFile(p, buf.Bytes(), 0o644)
}

// Wheelhouse writes the wheels into a new folder under parent and returns
// it.
func Wheelhouse(parent string, wheels ...Wheel) (string, error) {
	dir, err := os.MkdirTemp(parent, "wheelhouse-")
	if err != nil {
		return "", err
	}
	for _, w := range wheels {
		if _, _, err := w.Write(dir); err != nil {
			return "", err
		}
	}
	return dir, nil
}
