package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// The files of `skillgate cert dev`, by role. Keys are written 0600 in a
// 0700 directory: anyone who can read ca-key.pem can mint certificates
// this machine's clients trust.
const (
	devCACert     = "ca.pem"
	devCAKey      = "ca-key.pem"
	devServerCert = "server.pem"
	devServerKey  = "server-key.pem"
	devClientCert = "client.pem"
	devClientKey  = "client-key.pem"
)

// Lifetimes: the CA outlives the leaves so that re-issuing them keeps the
// trust clients already have; 825 days is the longest leaf lifetime that
// Apple's TLS clients accept.
const (
	devCALifetime   = 10 * 365 * 24 * time.Hour
	devLeafLifetime = 825 * 24 * time.Hour
)

// devCertNames are always in the server certificate: a local gateway is
// reached by one of them.
var devCertNames = []string{"localhost", "127.0.0.1", "::1"}

func newCertCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cert",
		Short: "Make certificates for TLS and mutual TLS",
	}
	var dir, clientName string
	dev := &cobra.Command{
		Use:   "dev [NAME...]",
		Short: "Make a local CA, a server certificate and a client certificate for development",
		Long: "Write a local CA (ca.pem, ca-key.pem), a server certificate for localhost, 127.0.0.1, ::1 and\n" +
			"the NAMEs given (server.pem, server-key.pem) and a client certificate for mutual TLS (client.pem,\n" +
			"client-key.pem) into --dir, keys mode 0600 in a 0700 directory. A CA already in --dir is kept, so\n" +
			"clients that trust it go on trusting the new certificates. For development only: never trust the\n" +
			"CA anywhere else (docs/tls.md).",
		Example: "  skillgate cert dev\n  skillgate cert dev --dir certs gateway.local 192.168.1.20",
		RunE: func(cmd *cobra.Command, args []string) error {
			return writeDevCerts(cmd.OutOrStdout(), dir, clientName, args)
		},
	}
	dev.Flags().StringVar(&dir, "dir", "skillgate-dev-certs", "the directory to write into (made 0700 when missing)")
	dev.Flags().StringVar(&clientName, "client-name", "dev-client", "the client certificate's common name (auth files match it)")
	cmd.AddCommand(dev)
	return cmd
}

// devIssuer is a CA that signs leaves.
type devIssuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func writeDevCerts(out io.Writer, dir, clientName string, names []string) error {
	hosts, err := devHosts(names)
	if err != nil {
		return err
	}
	if strings.TrimSpace(clientName) == "" {
		return errors.New("--client-name must not be empty")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if st, err := os.Stat(dir); err != nil {
		return err
	} else if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is open to other users (mode %o): the CA key must not be; chmod 700 it or pick another --dir", dir, st.Mode().Perm())
	}
	ca, made, err := loadOrMakeDevCA(dir)
	if err != nil {
		return err
	}
	serverTmpl := devLeaf("skillgate dev server", x509.ExtKeyUsageServerAuth)
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			serverTmpl.IPAddresses = append(serverTmpl.IPAddresses, ip)
		} else {
			serverTmpl.DNSNames = append(serverTmpl.DNSNames, h)
		}
	}
	if err := ca.issue(dir, devServerCert, devServerKey, serverTmpl); err != nil {
		return err
	}
	if err := ca.issue(dir, devClientCert, devClientKey, devLeaf(clientName, x509.ExtKeyUsageClientAuth)); err != nil {
		return err
	}
	caNote := "kept"
	if made {
		caNote = "new"
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	fmt.Fprintf(out, "CA (%s):    %s, %s\nserver:      %s, %s (for %s)\nclient:      %s, %s (CN %s)\n\n",
		caNote, p(devCACert), p(devCAKey), p(devServerCert), p(devServerKey), strings.Join(hosts, ", "),
		p(devClientCert), p(devClientKey), clientName)
	fmt.Fprintf(out, "serve:  skillgate serve --tls-listen 127.0.0.1:7443 --tls-cert %s --tls-key %s --tls-client-ca %s\n",
		p(devServerCert), p(devServerKey), p(devCACert))
	fmt.Fprintf(out, "call:   skillgate call --addr localhost:7443 --tls --tls-ca %s --tls-cert %s --tls-key %s list_skills\n",
		p(devCACert), p(devClientCert), p(devClientKey))
	return nil
}

// devHosts is the fixed names plus the given ones, each once; a name must
// be an IP address or a DNS name (a leading "*." makes a wildcard).
func devHosts(names []string) ([]string, error) {
	hosts := append([]string(nil), devCertNames...)
	for _, n := range names {
		if net.ParseIP(n) == nil && !validDNSName(strings.TrimPrefix(n, "*.")) {
			return nil, fmt.Errorf("%q is neither an IP address nor a DNS name", n)
		}
		dup := false
		for _, h := range hosts {
			dup = dup || strings.EqualFold(h, n)
		}
		if !dup {
			hosts = append(hosts, n)
		}
	}
	return hosts, nil
}

func validDNSName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

func devLeaf(cn string, usage x509.ExtKeyUsage) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: []string{"skillgate development"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage},
		NotBefore:   time.Now().Add(-time.Hour), // a clock a little behind still accepts it
		NotAfter:    time.Now().Add(devLeafLifetime),
	}
}

// loadOrMakeDevCA reads the CA in dir, or makes one when neither of its
// files exists; reports whether it made it.
func loadOrMakeDevCA(dir string) (*devIssuer, bool, error) {
	certPEM, cerr := os.ReadFile(filepath.Join(dir, devCACert))
	keyPEM, kerr := os.ReadFile(filepath.Join(dir, devCAKey))
	switch {
	case cerr == nil && kerr == nil:
		ca, err := parseDevCA(certPEM, keyPEM)
		if err != nil {
			return nil, false, fmt.Errorf("the CA in %s: %w (remove %s and %s to make a new one)", dir, err, devCACert, devCAKey)
		}
		return ca, false, nil
	case !errors.Is(cerr, os.ErrNotExist) || !errors.Is(kerr, os.ErrNotExist):
		return nil, false, fmt.Errorf("%s holds only one of %s and %s: remove it or restore the other", dir, devCACert, devCAKey)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, false, err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "skillgate development CA " + host, Organization: []string{"skillgate development"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(devCALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, false, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, false, err
	}
	ca := &devIssuer{cert: cert, key: key}
	if err := writeDevPair(dir, devCACert, devCAKey, der, key); err != nil {
		return nil, false, err
	}
	return ca, true, nil
}

func parseDevCA(certPEM, keyPEM []byte) (*devIssuer, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("not a CA certificate with its key")
	}
	return &devIssuer{cert: cert, key: key}, nil
}

func (ca *devIssuer) issue(dir, certName, keyName string, tmpl *x509.Certificate) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl.SerialNumber = randomSerial()
	if tmpl.NotAfter.After(ca.cert.NotAfter) {
		tmpl.NotAfter = ca.cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return err
	}
	return writeDevPair(dir, certName, keyName, der, key)
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

// writeDevPair writes a certificate (0644) and its key (0600), each to a
// temporary file renamed into place, so that a reader never sees half a
// file and a key is never readable by others even for a moment.
func writeDevPair(dir, certName, keyName string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, keyName), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, certName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // gone after the rename; removes it on failure
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
