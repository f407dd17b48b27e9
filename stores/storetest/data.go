package storetest

import (
	"crypto/rand"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/stores"
)

func testResultAndFingerprintRoundTrip(t *testing.T, h Harness) {
	s := h.New(t)
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	big := make([]byte, 1<<20)
	_, _ = rand.Read(big)

	for _, tc := range []struct {
		name        string
		fingerprint []byte
		result      []byte
	}{
		{"empty result", []byte("fp"), []byte{}},
		{"nil result", []byte("fp"), nil},
		{"every byte value", allBytes, allBytes},
		{"sha256 fingerprint", big[:32], []byte(`{"ok":true}`)},
		{"1 MiB result", []byte("fp"), big},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := key(t, "k")
			c := mustClaim(t, s, k, tc.fingerprint, longLease)
			wantStatus(t, c, stores.Acquired)

			held := mustClaim(t, s, k, nil, longLease)
			wantBytes(t, "in-progress fingerprint", held.Record.Fingerprint, tc.fingerprint)

			mustComplete(t, s, k, c.Token, tc.result)
			done := mustClaim(t, s, k, nil, longLease)
			wantStatus(t, done, stores.Completed)
			wantBytes(t, "fingerprint", done.Record.Fingerprint, tc.fingerprint)
			wantBytes(t, "result", done.Record.Result, tc.result)
		})
	}
}

func testKeyLengths(t *testing.T, h Harness) {
	s := h.New(t)
	prefix := key(t, "")
	for _, k := range []string{
		"x", // one byte, with no test prefix: keys are scoped by the store under test
		prefix + strings.Repeat("k", stores.MaxKeyBytes),
		prefix + strings.Repeat("k", 10_000),
		prefix + "binary\x00\xff\xfe",
		prefix + "unicode: ключ 鍵 🔑",
	} {
		owner := mustAcquire(t, s, k, longLease)
		mustComplete(t, s, k, owner.Token, []byte(k[:1]))
		c := mustClaim(t, s, k, fingerprint, longLease)
		wantStatus(t, c, stores.Completed)
		wantBytes(t, "result of key "+short(k), c.Record.Result, []byte(k[:1]))
	}
}

func testLongKeysSharingPrefixAreDistinct(t *testing.T, h Harness) {
	s := h.New(t)
	prefix := key(t, "") + strings.Repeat("p", 255)
	a, b := prefix+"-a", prefix+"-b"

	owner := mustAcquire(t, s, a, longLease)
	mustComplete(t, s, a, owner.Token, []byte("a"))

	// Truncation would make b collide with a; hashing the whole key keeps
	// them apart.
	wantStatus(t, mustClaim(t, s, b, fingerprint, longLease), stores.Acquired)

	// A short key that spells out the form of a hashed key is still its own
	// key.
	hashed, err := stores.StorageKey(a)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, mustClaim(t, s, hashed, fingerprint, longLease), stores.Acquired)
	c := mustClaim(t, s, a, fingerprint, longLease)
	wantStatus(t, c, stores.Completed)
	wantBytes(t, "result of a", c.Record.Result, []byte("a"))
}
