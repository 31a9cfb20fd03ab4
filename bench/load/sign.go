package load

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"strconv"
)

// Cred is one API user's credentials.
type Cred struct {
	UID        int64  `json:"uid"`
	APIKey     string `json:"apiKey"`
	SecretKey  string `json:"secretKey"`
	Passphrase string `json:"passphrase"`
}

// Signer computes ACCESS-SIGN for one secret (docs/API.md, "Authentication"):
// base64(HMAC-SHA256(secret, timestamp + METHOD + path + ("?" + query) + body)).
// A Signer is not safe for concurrent use; each worker owns its own.
type Signer struct {
	mac hash.Hash
	sum [sha256.Size]byte
	buf []byte
}

// NewSigner returns a signer for secret.
func NewSigner(secret string) *Signer {
	return &Signer{mac: hmac.New(sha256.New, []byte(secret))}
}

// AppendSign appends the base64 signature of the request to dst. query is
// the raw query string without '?' (empty: none).
func (s *Signer) AppendSign(dst []byte, timestampMs int64, method, path string, query, body []byte) []byte {
	b := strconv.AppendInt(s.buf[:0], timestampMs, 10)
	b = append(b, method...)
	b = append(b, path...)
	if len(query) > 0 {
		b = append(b, '?')
		b = append(b, query...)
	}
	b = append(b, body...)
	s.buf = b
	s.mac.Reset()
	s.mac.Write(b)
	sum := s.mac.Sum(s.sum[:0])
	return base64.StdEncoding.AppendEncode(dst, sum)
}
