package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testCA issues certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

var serial int64

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns a client (or, with server set, a server) certificate.
func (ca *testCA) issue(t *testing.T, cn string, dns []string, uris []string, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial + 100),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     dns,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	for _, u := range uris {
		pu, err := url.Parse(u)
		require.NoError(t, err)
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// verified returns the connection state of a TLS server that verified the
// certificate against the CA.
func (ca *testCA) verified(t *testing.T, c tls.Certificate) *tls.ConnectionState {
	t.Helper()
	chains, err := c.Leaf.Verify(x509.VerifyOptions{Roots: ca.pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	return &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c.Leaf}, VerifiedChains: chains}
}

func TestAuthenticateCert(t *testing.T) {
	s := loadStore(t, expand(goodFile), Options{Logger: testLogger(t)})
	ca := newTestCA(t, "test CA")
	cn := ca.issue(t, "device-42", nil, nil, false)
	tests := []struct {
		name     string
		state    *tls.ConnectionState
		identity string
		reason   FailureReason
	}{
		{"common name", ca.verified(t, cn), "pos-fleet", ReasonNone},
		{"DNS SAN, case and trailing dot ignored", ca.verified(t, ca.issue(t, "", []string{"pos-7.EXAMPLE.com"}, nil, false)), "pos-fleet", ReasonNone},
		{"URI SAN", ca.verified(t, ca.issue(t, "someone", nil, []string{"spiffe://example.com/pos"}, false)), "pos-fleet", ReasonNone},
		{"SAN of other identity's CN does not count", ca.verified(t, ca.issue(t, "x", []string{"dashboard"}, nil, false)), "", ReasonCertUnknown},
		{"two attributes of one identity", ca.verified(t, ca.issue(t, "device-42", []string{"pos-7.example.com"}, nil, false)), "pos-fleet", ReasonNone},
		{"unknown certificate", ca.verified(t, ca.issue(t, "device-43", []string{"pos-8.example.com"}, []string{"spiffe://example.com/other"}, false)), "", ReasonCertUnknown},
		{"attributes of two identities", ca.verified(t, ca.issue(t, "dashboard", []string{"pos-7.example.com"}, nil, false)), "", ReasonCertAmbiguous},
		{"unverified", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cn.Leaf}}, "", ReasonCertUnverified},
		{"no client certificate", &tls.ConnectionState{}, "", ReasonMissing},
		{"not TLS", nil, "", ReasonMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := s.AuthenticateCert(tt.state)
			assert.Equal(t, tt.reason, Reason(err))
			if tt.reason != ReasonNone {
				assert.Nil(t, id)
				if tt.reason == ReasonMissing {
					assert.ErrorIs(t, err, ErrNoCredentials)
				} else {
					assert.ErrorIs(t, err, ErrBadCredentials)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.identity, id.Name())
		})
	}
}

// handshake runs a real TLS handshake over an in-memory pipe and returns
// the server's view, or the handshake error.
func handshake(t *testing.T, serverCA *testCA, server tls.Certificate, client *tls.Certificate) (*tls.ConnectionState, error) {
	t.Helper()
	sc, cc := net.Pipe()
	defer sc.Close()
	defer cc.Close()
	srv := tls.Server(sc, &tls.Config{
		Certificates: []tls.Certificate{server},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    serverCA.pool,
	})
	ccfg := &tls.Config{RootCAs: serverCA.pool, ServerName: "127.0.0.1"}
	if client != nil {
		// Sent whatever CAs the server asks for: a Go client would
		// otherwise withhold a certificate of another CA.
		ccfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return client, nil }
	}
	cli := tls.Client(cc, ccfg)
	done := make(chan error, 1)
	go func() {
		err := cli.Handshake()
		if err == nil {
			// TLS 1.3 reports a rejected client certificate on first read.
			_, err = cli.Read(make([]byte, 1))
		}
		done <- err
	}()
	err := srv.Handshake()
	if err == nil {
		_ = srv.Close() // ends the client's read
	} else {
		_ = sc.Close()
	}
	<-done
	if err != nil {
		return nil, err
	}
	st := srv.ConnectionState()
	return &st, nil
}

func TestAuthenticateCertHandshake(t *testing.T) {
	s := loadStore(t, expand(goodFile), Options{Logger: testLogger(t)})
	ca, otherCA := newTestCA(t, "client CA"), newTestCA(t, "other CA")
	server := ca.issue(t, "gateway", nil, nil, true)

	good := ca.issue(t, "device-42", nil, nil, false)
	st, err := handshake(t, ca, server, &good)
	require.NoError(t, err)
	id, err := s.AuthenticateCert(st)
	require.NoError(t, err)
	assert.Equal(t, "pos-fleet", id.Name())

	st, err = handshake(t, ca, server, nil)
	require.NoError(t, err)
	_, err = s.AuthenticateCert(st)
	assert.Equal(t, ReasonMissing, Reason(err))

	wrongCA := otherCA.issue(t, "device-42", nil, nil, false)
	_, err = handshake(t, ca, server, &wrongCA)
	require.Error(t, err, "a certificate of another CA fails the handshake")
}

func TestRevalidateCertIdentity(t *testing.T) {
	path := tempFile(t, expand(goodFile))
	s, err := Load(path, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	ca := newTestCA(t, "CA")
	byCN, err := s.AuthenticateCert(ca.verified(t, ca.issue(t, "device-42", nil, nil, false)))
	require.NoError(t, err)
	byURI, err := s.AuthenticateCert(ca.verified(t, ca.issue(t, "", nil, []string{"spiffe://example.com/pos"}, false)))
	require.NoError(t, err)

	writeAtomic(t, path, strings.Replace(expand(goodFile), "      - common_name: device-42\n", "", 1))
	require.NoError(t, s.Reload())
	_, err = s.Revalidate(byCN)
	assert.Equal(t, ReasonRevoked, Reason(err))
	cur, err := s.Revalidate(byURI)
	require.NoError(t, err)
	assert.Equal(t, "pos-fleet", cur.Name())
}
