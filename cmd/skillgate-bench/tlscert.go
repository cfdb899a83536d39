package main

import (
	"crypto/x509"

	"github.com/skillgate/skillgate/internal/testpki"
)

// selfSigned writes a fresh certificate for 127.0.0.1 and localhost, and its
// key, into dir, and returns their paths and a pool that trusts it.
func selfSigned(dir string) (certFile, keyFile string, pool *x509.CertPool, err error) {
	ca := testpki.NewCA("skillgate-bench")
	certFile, keyFile = testpki.WritePEM(dir, "server", ca.Server())
	return certFile, keyFile, ca.Pool(), nil
}
