// Package testpki generates throwaway certificate authorities and
// certificates for tests of TLS and mutual TLS: a CA, a server certificate
// for 127.0.0.1 and client certificates, all ECDSA P-256 and valid for a day.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

var serial atomic.Int64

// CA is a certificate authority that signs leaf certificates.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA creates a self-signed certificate authority.
func NewCA(name string) *CA {
	key := mustKey()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, key: key}
}

// Pool returns a pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Server issues a server certificate for 127.0.0.1 and localhost.
func (ca *CA) Server() tls.Certificate {
	return ca.leaf(pkix.Name{CommonName: "127.0.0.1"}, func(t *x509.Certificate) {
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		t.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		t.DNSNames = []string{"localhost"}
	})
}

// Client issues a client certificate with the given common name and DNS
// names.
func (ca *CA) Client(commonName string, dnsNames ...string) tls.Certificate {
	return ca.leaf(pkix.Name{CommonName: commonName}, func(t *x509.Certificate) {
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		t.DNSNames = dnsNames
	})
}

func (ca *CA) leaf(subject pkix.Name, shape func(*x509.Certificate)) tls.Certificate {
	key := mustKey()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	shape(tmpl)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		panic(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// ServerConfig is a TLS 1.2+ server configuration; with clientCAs set,
// clients must present a certificate one of them signed.
func ServerConfig(cert tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAs != nil {
		c.ClientCAs, c.ClientAuth = clientCAs, tls.RequireAndVerifyClientCert
	}
	return c
}

// ClientConfig trusts roots and presents cert when it is not nil.
func ClientConfig(roots *x509.CertPool, cert *tls.Certificate) *tls.Config {
	c := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

// WritePEM writes a certificate chain and its key as PEM files in dir and
// returns their paths, for tests that configure a binary with files.
func WritePEM(dir, name string, cert tls.Certificate) (certFile, keyFile string) {
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	var certPEM []byte
	for _, der := range cert.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		panic(err)
	}
	must(os.WriteFile(certFile, certPEM, 0o600))
	must(os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certFile, keyFile
}

// WriteCAPEM writes the CA certificate as a PEM file and returns its path.
func (ca *CA) WriteCAPEM(dir string) string {
	path := filepath.Join(dir, "ca.crt")
	must(os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o600))
	return path
}

func mustKey() *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return key
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
