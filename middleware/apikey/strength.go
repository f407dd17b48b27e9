package apikey

import "fmt"

// The rule [CheckKey] holds a key to.
const (
	// MinKeyLen is the shortest key, in bytes.
	MinKeyLen = 16
	// MinKeyDistinct is the fewest different characters a key may hold.
	MinKeyDistinct = 8
)

// CheckKey refuses a key that cannot be a random secret: one shorter than
// [MinKeyLen] bytes, or with fewer than [MinKeyDistinct] different
// characters (aaaaaaaaaaaaaaaa, abababababababab, passwordpassword). Both
// are cheap to guess, and both are what a placeholder or a typo looks
// like. A random key of 32 hexadecimal digits (openssl rand -hex 16)
// always passes; one of 16 fails about once in a hundred, so draw a
// longer one. The rule cannot tell a random key from a memorable one of
// enough characters: it catches the keys that are surely not secrets.
//
// [NewKeys] does not apply it, so that a library user's tests may use
// short keys; the service applies it to every key it is configured with.
// Its error never shows the key.
func CheckKey(key string) error {
	const rule = "use a random key: at least %d characters, at least %d of them different (openssl rand -hex 16 makes one)"
	if len(key) < MinKeyLen {
		return fmt.Errorf("the key is too short (%d of %d characters): "+rule, len(key), MinKeyLen, MinKeyLen, MinKeyDistinct)
	}
	distinct := map[rune]bool{}
	for _, r := range key {
		distinct[r] = true
	}
	if len(distinct) < MinKeyDistinct {
		return fmt.Errorf("the key has too few different characters (%d of %d): "+rule, len(distinct), MinKeyDistinct, MinKeyLen, MinKeyDistinct)
	}
	return nil
}
