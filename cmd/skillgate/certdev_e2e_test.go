package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCertDevServesMutualTLS: the files of `skillgate cert dev` start a
// gateway with mutual TLS that a client with the client certificate
// reaches, by name and by address, and one without it does not.
func TestCertDevServesMutualTLS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	out, stderr, code := runCLI(t, "cert", "dev", "--dir", dir, "gw.example.test", "10.1.2.3")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "CA (new)")
	assert.Contains(t, out, "--tls-client-ca "+filepath.Join(dir, devCACert))

	st, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	for name, mode := range map[string]os.FileMode{devCAKey: 0o600, devServerKey: 0o600, devClientKey: 0o600,
		devCACert: 0o644, devServerCert: 0o644, devClientCert: 0o644} {
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Equal(t, mode, st.Mode().Perm(), name)
	}
	server := readCert(t, filepath.Join(dir, devServerCert))
	assert.ElementsMatch(t, []string{"localhost", "gw.example.test"}, server.DNSNames)
	var ips []string
	for _, ip := range server.IPAddresses {
		ips = append(ips, ip.String())
	}
	assert.ElementsMatch(t, []string{"127.0.0.1", "::1", "10.1.2.3"}, ips)
	assert.Equal(t, "dev-client", readCert(t, filepath.Join(dir, devClientCert)).Subject.CommonName)

	f := func(name string) string { return filepath.Join(dir, name) }
	g := startGateway(t, "--http-listen", "", "--sandbox-workers", "0", "--tls-listen", "127.0.0.1:0",
		"--tls-cert", f(devServerCert), "--tls-key", f(devServerKey), "--tls-client-ca", f(devCACert))
	addr := g.addrs["tls"]
	require.NotEmpty(t, addr)
	port := addr[strings.LastIndex(addr, ":")+1:]
	for _, a := range []string{addr, "localhost:" + port} {
		out, stderr, code = runCLI(t, "call", "--addr", a, "--tls", "--tls-ca", f(devCACert),
			"--tls-cert", f(devClientCert), "--tls-key", f(devClientKey), "_Keepalive", "{}")
		assert.Equal(t, 0, code, "with the client certificate via %s: %s", a, stderr)
		assert.JSONEq(t, `{}`, out)
	}
	_, stderr, code = runCLI(t, "call", "--addr", addr, "--tls", "--tls-ca", f(devCACert), "_Keepalive", "{}")
	assert.Equal(t, 2, code, "without a client certificate the handshake fails: %s", stderr)

	// Straight TLS, as any client: the CA verifies the server by its name.
	pool := x509.NewCertPool()
	pool.AddCert(readCert(t, f(devCACert)))
	pair, err := tls.LoadX509KeyPair(f(devClientCert), f(devClientKey))
	require.NoError(t, err)
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "gw.example.test", Certificates: []tls.Certificate{pair}})
	require.NoError(t, err)
	require.NoError(t, conn.Handshake())
	_ = conn.Close()
	_, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "other.example.test", Certificates: []tls.Certificate{pair}})
	assert.Error(t, err, "a name the certificate was not made for")
}

// TestCertDevKeepsItsCA: a second run issues new leaves under the same CA,
// so that clients which trust it keep working.
func TestCertDevKeepsItsCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	_, stderr, code := runCLI(t, "cert", "dev", "--dir", dir)
	require.Equal(t, 0, code, stderr)
	ca1, _ := os.ReadFile(filepath.Join(dir, devCACert))
	srv1, _ := os.ReadFile(filepath.Join(dir, devServerCert))
	out, stderr, code := runCLI(t, "cert", "dev", "--dir", dir, "--client-name", "device-7")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "CA (kept)")
	ca2, _ := os.ReadFile(filepath.Join(dir, devCACert))
	srv2, _ := os.ReadFile(filepath.Join(dir, devServerCert))
	assert.Equal(t, ca1, ca2)
	assert.NotEqual(t, srv1, srv2)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca1))
	client := readCert(t, filepath.Join(dir, devClientCert))
	assert.Equal(t, "device-7", client.Subject.CommonName)
	_, err := client.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 6, "no temporary files are left")
}

func TestCertDevRefusesBadInput(t *testing.T) {
	base := t.TempDir()
	_, stderr, code := runCLI(t, "cert", "dev", "--dir", filepath.Join(base, "a"), "bad name!")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "neither an IP address nor a DNS name")
	_, stderr, code = runCLI(t, "cert", "dev", "--dir", filepath.Join(base, "b"), "--client-name", " ")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--client-name")

	open := filepath.Join(base, "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o777))
	_, stderr, code = runCLI(t, "cert", "dev", "--dir", open)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "open to other users")

	half := filepath.Join(base, "half")
	require.NoError(t, os.Mkdir(half, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(half, devCACert), []byte("x"), 0o644))
	_, stderr, code = runCLI(t, "cert", "dev", "--dir", half)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "only one of")

	require.NoError(t, os.WriteFile(filepath.Join(half, devCAKey), []byte("x"), 0o600))
	_, stderr, code = runCLI(t, "cert", "dev", "--dir", half)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "not PEM")
}

func TestDevHosts(t *testing.T) {
	hosts, err := devHosts([]string{"LOCALHOST", "*.dev.test", "192.168.0.1", "fe80::1", "a-b.example"})
	require.NoError(t, err)
	assert.Equal(t, []string{"localhost", "127.0.0.1", "::1", "*.dev.test", "192.168.0.1", "fe80::1", "a-b.example"}, hosts)
	for _, bad := range []string{"", "-a.test", "a-.test", "a..test", "a b", "ex_ample.test", strings.Repeat("a", 64) + ".test", "*.", "a.*.test"} {
		_, err := devHosts([]string{bad})
		assert.Error(t, err, "%q", bad)
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	block, _ := pem.Decode(data)
	require.NotNil(t, block, path)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert
}
