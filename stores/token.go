package stores

import (
	"crypto/rand"
	"encoding/hex"
)

// NewToken returns a fresh fencing token: 128 random bits, hex encoded.
// The Redis and PostgreSQL stores call it on every acquisition, as their
// tokens must be unique across processes; the memory store, whose tokens
// never leave its process, draws one for a prefix and counts from there.
func NewToken() Token {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return Token(hex.EncodeToString(b[:]))
}
