package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillgate/skillgate/sandbox/internal/wire"
)

// The run's /etc is a read-only projection of the host's: a few files the
// sandbox writes itself, then the allow-listed host paths below, copied once
// per Runner into its work directory and bound into every sandbox with one
// mount. Nothing else of the host's /etc is visible: no shadow, ssh,
// sudoers, private keys, machine identity, resolver or the gateway's own
// configuration. docs/sandbox.md keeps the same table for operators.
//
// A host path that is missing is skipped; a symlink is kept as a symlink
// (its target must be inside the run's view to resolve, which those below
// are: /usr, or another entry).
var systemView = []struct {
	path, reason string
}{
	{"alternatives", "Debian's alternatives: libblas.so.3 and liblapack.so.3 (numpy, scipy, pandas) and common commands resolve through it"},
	{"ssl/certs", "the CA trust store: OpenSSL's default paths (/usr/lib/ssl/certs, cert.pem) point here, so HTTPS verifies"},
	{"ssl/openssl.cnf", "OpenSSL's configuration (/usr/lib/ssl/openssl.cnf points here)"},
	{"pki/tls/certs", "the CA trust store on Fedora and RHEL-like hosts"},
	{"pki/ca-trust/extracted", "the CA bundles on Fedora and RHEL-like hosts (pki/tls/certs points here)"},
	{"ca-certificates.conf", "which CAs the trust store holds, for tools that read it"},
	{"localtime", "the host's time zone (a symlink into /usr/share/zoneinfo)"},
	{"timezone", "the host's time zone by name (Debian)"},
	{"mime.types", "file types by extension (Python's mimetypes)"},
	{"magic", "libmagic's local rules (file, python3-magic)"},
	{"magic.mime", "libmagic's local MIME rules"},
	{"fonts", "fontconfig's configuration (matplotlib, cairo, reportlab's font lookups)"},
	{"matplotlibrc", "Debian's default matplotlib configuration"},
	{"ld.so.conf", "the dynamic loader's search path"},
	{"ld.so.conf.d", "the dynamic loader's search path"},
	{"ld.so.cache", "the dynamic loader's cache: every shared library is found through it"},
	{"protocols", "protocol names (socket.getprotobyname)"},
	{"services", "service names and ports (socket.getservbyname, urllib)"},
	{"xml/catalog", "libxml2's default XML catalog (lxml)"},
	{"os-release", "the distribution's name and version (platform, pip, many libraries' bug reports)"},
	{"debian_version", "the Debian release"},
	{"python3", "Debian's Python configuration"},
	{"python3.11", "Debian's per-version Python configuration (sitecustomize)"},
	{"python3.12", "Debian's per-version Python configuration (sitecustomize)"},
	{"python3.13", "Debian's per-version Python configuration (sitecustomize)"},
	{"ImageMagick-6", "ImageMagick's security policy, when Wand or convert is used"},
}

// generatedEtc are the files the sandbox writes instead of taking the
// host's: users and groups of the run alone, its own host name, and name
// services that only read those files (the host's nsswitch.conf may name
// modules that talk to daemons the run cannot reach).
var generatedEtc = map[string]string{
	"passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
		"sandbox:x:1000:1000:sandbox:/workspace:/usr/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
	"group":         "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n",
	"hostname":      wire.Hostname + "\n",
	"hosts":         "127.0.0.1 localhost " + wire.Hostname + "\n::1 localhost\n",
	"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n",
}

// Bounds of the copy: the allow-list holds small configuration files, and
// a host whose entries are far larger (a huge font tree, a loop of
// directory symlinks cannot occur: symlinks are not followed) is cut off
// rather than copied into every Runner's directory.
const (
	maxSystemViewBytes   = 64 << 20
	maxSystemViewEntries = 8192
)

var errSystemViewTooLarge = errors.New("the host's allow-listed /etc entries exceed the copy's bounds")

// buildSystemView writes the run's /etc under dst from the host's /etc at
// hostEtc. Host entries that cannot be read are skipped (a hardened host
// may hide one); only a failure to write dst is an error.
func buildSystemView(dst, hostEtc string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for name, content := range generatedEtc {
		if err := writeViewFile(filepath.Join(dst, name), strings.NewReader(content)); err != nil {
			return err
		}
	}
	c := &viewCopy{}
	for _, e := range systemView {
		src, to := filepath.Join(hostEtc, e.path), filepath.Join(dst, e.path)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := c.copy(src, to); err != nil {
			return fmt.Errorf("system view: %s: %w", e.path, err)
		}
	}
	return chmodTree(dst)
}

// viewCopy copies host entries, counting what it has copied.
type viewCopy struct {
	bytes   int64
	entries int
}

func (c *viewCopy) copy(src, dst string) error {
	st, err := os.Lstat(src)
	if err != nil {
		return nil // missing or hidden on this host
	}
	if c.entries++; c.entries > maxSystemViewEntries {
		return errSystemViewTooLarge
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return nil
		}
		return os.Symlink(target, dst)
	case st.IsDir():
		entries, err := os.ReadDir(src)
		if err != nil {
			return nil
		}
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
		for _, e := range entries {
			if err := c.copy(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				return err
			}
		}
		return nil
	case st.Mode().IsRegular():
		if c.bytes += st.Size(); c.bytes > maxSystemViewBytes {
			return errSystemViewTooLarge
		}
		f, err := os.Open(src)
		if err != nil {
			return nil
		}
		defer f.Close()
		return writeViewFile(dst, io.LimitReader(f, st.Size()))
	}
	return nil // devices, sockets and fifos have no place in /etc's view
}

func writeViewFile(dst string, r io.Reader) error {
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}

// chmodTree makes the view readable by the run's uid whatever the umask:
// directories 0755, files 0644 (symlinks have no mode of their own).
func chmodTree(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return nil
		case d.IsDir():
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	})
}
