package main

import (
	"crypto/x509"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidDNSName: every end of each character range a label may hold,
// the characters just outside them, and the lengths RFC 1035 allows.
func TestValidDNSName(t *testing.T) {
	for _, good := range []string{
		"a", "z", "A", "Z", "0", "9", "a-z", "A-Z", "0-9", "az.AZ.09",
		strings.Repeat("a", 63) + ".test",
		strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 61), // 253 bytes
	} {
		assert.True(t, validDNSName(good), "%q (%d bytes)", good, len(good))
	}
	for _, bad := range []string{
		"", "`", "{", "@", "[", "/", ":", "_", "é", "a.", ".a", "a..b", "-a", "a-", "a.-b", "a.b-",
		strings.Repeat("a", 64) + ".test",
		strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 62), // 254 bytes
	} {
		assert.False(t, validDNSName(bad), "%q (%d bytes)", bad, len(bad))
	}
}

// TestDevCertificateLifetimes: the CA lives ten years and a leaf 825
// days (the longest Apple's TLS clients accept), each from an hour ago; a
// leaf never outlives its CA.
func TestDevCertificateLifetimes(t *testing.T) {
	dir := t.TempDir()
	ca, made, err := loadOrMakeDevCA(dir)
	require.NoError(t, err)
	require.True(t, made)
	const slack = time.Minute
	assert.InDelta(t, float64(10*365*24*time.Hour+time.Hour), float64(ca.cert.NotAfter.Sub(ca.cert.NotBefore)), float64(slack))
	assert.WithinDuration(t, time.Now().Add(-time.Hour), ca.cert.NotBefore, slack)

	require.NoError(t, ca.issue(dir, "leaf.pem", "leaf.key", devLeaf("leaf", x509.ExtKeyUsageServerAuth)))
	leaf := readCert(t, filepath.Join(dir, "leaf.pem"))
	assert.InDelta(t, float64(825*24*time.Hour+time.Hour), float64(leaf.NotAfter.Sub(leaf.NotBefore)), float64(slack))
	assert.WithinDuration(t, time.Now().Add(-time.Hour), leaf.NotBefore, slack)

	soon := time.Now().Add(24 * time.Hour).Truncate(time.Second) // a CA with a day left
	ca.cert.NotAfter = soon
	require.NoError(t, ca.issue(dir, "late.pem", "late.key", devLeaf("late", x509.ExtKeyUsageClientAuth)))
	late := readCert(t, filepath.Join(dir, "late.pem"))
	assert.WithinDuration(t, soon, late.NotAfter, time.Second, "clamped to the CA's end")
}
