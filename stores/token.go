package stores

import (
	"crypto/rand"
	"encoding/hex"
)

// NewToken returns a fresh fencing token: 128 random bits, hex encoded.
// Stores call it on every acquisition.
func NewToken() Token {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return Token(hex.EncodeToString(b[:]))
}
