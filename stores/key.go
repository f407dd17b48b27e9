package stores

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyBytes is the longest key a store keeps as given. Longer keys are
// replaced by their SHA-256 (see StorageKey). It fits PostgreSQL btree index
// entries and keeps Redis keys readable.
const MaxKeyBytes = 200

// hashedKeyPrefix marks keys that StorageKey replaced by their hash.
const hashedKeyPrefix = "sha256:"

// StorageKey returns the key a store should use for key. Keys that are at
// most MaxKeyBytes of valid UTF-8 without NUL bytes are kept as they are, so
// operators can read them. Any other key — too long, binary, or one that
// itself looks like a hashed key — becomes "sha256:" followed by the hex
// SHA-256 of the whole key: never truncated, so two long keys that share a
// prefix stay distinct. The empty key is rejected with ErrInvalidKey.
func StorageKey(key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("%w: key is empty", ErrInvalidKey)
	}
	if len(key) <= MaxKeyBytes && utf8.ValidString(key) &&
		!strings.ContainsRune(key, 0) && !strings.HasPrefix(key, hashedKeyPrefix) {
		return key, nil
	}
	return HashedKey(key), nil
}

// HashedKey is the form StorageKey gives a key it does not keep as it is:
// "sha256:" followed by the hex SHA-256 of key. A store whose backend
// gives some kept keys a meaning of their own (a Redis Cluster hash tag)
// stores those under HashedKey too: no key StorageKey keeps starts with
// "sha256:", so the two never collide.
func HashedKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hashedKeyPrefix + hex.EncodeToString(sum[:])
}
