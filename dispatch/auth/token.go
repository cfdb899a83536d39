package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// TokenPrefix starts every token NewToken generates. It makes tokens easy to
// recognize in a leaked-secret scan and lets the parser refuse a plaintext
// token pasted into the auth file.
const TokenPrefix = "sgt_"

// hashPrefix starts a stored token hash.
const hashPrefix = "sha256:"

// MaxTokenLen bounds a presented token. Longer ones are rejected without
// hashing; generated tokens are 47 bytes.
const MaxTokenLen = 4096

type digest = [sha256.Size]byte

// NewToken returns a fresh random token: TokenPrefix followed by 32 random
// bytes in unpadded base64url.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new token: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// HashToken returns the form in which a token is stored in the auth file:
// "sha256:" and the lowercase hex SHA-256 of the token string.
func HashToken(token string) string {
	d := sha256.Sum256([]byte(token))
	return hashPrefix + hex.EncodeToString(d[:])
}

// parseHash decodes a stored "sha256:<64 hex>" hash. Upper-case hex is
// accepted.
func parseHash(s string) (digest, bool) {
	var d digest
	rest, ok := strings.CutPrefix(s, hashPrefix)
	if !ok || len(rest) != hex.EncodedLen(len(d)) {
		return d, false
	}
	if _, err := hex.Decode(d[:], []byte(rest)); err != nil {
		return d, false
	}
	return d, true
}

// hashPresented hashes a token a client presented. Tokens of usual length
// are copied to a stack buffer: a bad-token flood costs no allocation.
func hashPresented(token string) digest {
	var buf [128]byte
	if len(token) <= len(buf) {
		n := copy(buf[:], token)
		return sha256.Sum256(buf[:n])
	}
	return sha256.Sum256([]byte(token))
}

func hashBytes(b []byte) digest { return sha256.Sum256(b) }
