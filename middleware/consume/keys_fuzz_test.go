package consume

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// FuzzMessageKey derives keys from arbitrary metadata and UUIDs (empty,
// binary, 100 KiB long) and runs them through a receiver on a memory store.
// KeyFromMetadata returns the metadata value, else the UUID, else a
// Permanent ErrNoKey. A CompositeKey of two parts is one record exactly when
// both parts are equal: the handler runs twice for two messages whose parts
// differ, once when they are the same.
//
//	go test -run '^$' -fuzz '^FuzzMessageKey$' ./middleware/consume/
func FuzzMessageKey(f *testing.F) {
	f.Add("uuid-1", "payment-1", "tenant-a", "payment-1", "tenant-b")
	f.Add("", "", "", "", "")
	f.Add("u", "a:b", "c", "a", "b:c")
	f.Add("u", `a","b`, "", "a", "b")
	f.Fuzz(func(t *testing.T, uuid, a1, b1, a2, b2 string) {
		checkKeyFromMetadata(t, uuid, a1)
		part := func(v string) string { // what KeyFromMetadata falls back to
			if v == "" {
				return uuid
			}
			return v
		}
		same := part(a1) == part(a2) && part(b1) == part(b2)
		key := CompositeKey(KeyFromMetadata("a"), KeyFromMetadata("b"))
		msg := func(a, b string) *message.Message {
			m := message.NewMessage(uuid, []byte("payload"))
			m.Metadata.Set("a", a)
			m.Metadata.Set("b", b)
			return m
		}
		k1, err1 := key(msg(a1, b1))
		k2, err2 := key(msg(a2, b2))
		if uuid == "" && (a1 == "" || b1 == "") {
			if !errors.Is(err1, receiver.ErrNoKey) {
				t.Fatalf("composite key without parts or uuid: %q, %v; want ErrNoKey", k1, err1)
			}
			return
		}
		if err1 != nil || (err2 != nil) != (uuid == "" && (a2 == "" || b2 == "")) {
			t.Fatalf("composite keys: %v, %v", err1, err2)
		}
		if err2 != nil {
			return
		}
		if (k1 == k2) != same {
			t.Fatalf("parts (%q, %q) and (%q, %q) give keys %q and %q", part(a1), part(b1), part(a2), part(b2), k1, k2)
		}
		r, _ := receivertest.NewReceiver(t, receiver.Config{})
		runs := 0
		for _, k := range []string{k1, k2} {
			fp := PayloadFingerprint(msg(a1, b1))
			if _, err := r.Execute(context.Background(), "handler", k, fp, func(context.Context) ([]byte, error) {
				runs++
				return nil, nil
			}); err != nil {
				t.Fatalf("executing key %q: %v", k, err)
			}
		}
		want := 2
		if same {
			want = 1
		}
		if runs != want {
			t.Fatalf("parts (%q, %q) and (%q, %q): the handler ran %d times, want %d", a1, b1, a2, b2, runs, want)
		}
	})
}

// checkKeyFromMetadata checks the default key of a message with uuid and
// metadata idempotency_key meta.
func checkKeyFromMetadata(t *testing.T, uuid, meta string) {
	t.Helper()
	m := message.NewMessage(uuid, nil)
	m.Metadata.Set(MetadataKey, meta)
	k, err := KeyFromMetadata(MetadataKey)(m)
	switch {
	case meta == "" && uuid == "":
		if !errors.Is(err, receiver.ErrNoKey) || !Permanent(err) {
			t.Fatalf("no metadata, no uuid: %q, %v; want a permanent ErrNoKey", k, err)
		}
	case err != nil:
		t.Fatalf("metadata %q, uuid %q: %v", meta, uuid, err)
	case meta != "" && k != meta, meta == "" && k != uuid:
		t.Fatalf("metadata %q, uuid %q: key %q", meta, uuid, k)
	}
}

// FuzzFingerprint checks PayloadFingerprint: it is 32 bytes, ignores the
// UUID and metadata, and differs exactly when the payloads differ. (The
// HTTP request fingerprint is package idempotencykey's
// FuzzRequestFingerprint.)
//
//	go test -run '^$' -fuzz '^FuzzFingerprint$' ./middleware/consume/
func FuzzFingerprint(f *testing.F) {
	f.Add([]byte(`{"a":1}`), []byte(`{"a":2}`))
	f.Add([]byte{}, []byte(nil))
	f.Add([]byte("q"), []byte("bq"))
	f.Add([]byte{0xff}, []byte{0xfe})
	f.Fuzz(func(t *testing.T, payload, other []byte) {
		m1 := message.NewMessage("uuid-1", payload)
		m2 := message.NewMessage("uuid-2", bytes.Clone(payload))
		m2.Metadata.Set(MetadataKey, "key")
		fp := PayloadFingerprint(m1)
		if len(fp) != 32 || !bytes.Equal(fp, PayloadFingerprint(m2)) {
			t.Fatalf("payload %q: fingerprints %x and %x", payload, fp, PayloadFingerprint(m2))
		}
		if bytes.Equal(fp, PayloadFingerprint(message.NewMessage("uuid-1", other))) != bytes.Equal(payload, other) {
			t.Fatalf("payloads %q and %q: fingerprint equality is not payload equality", payload, other)
		}
	})
}
