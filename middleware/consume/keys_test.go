package consume

import (
	"errors"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/receiver"
)

func TestKeyFuncs(t *testing.T) {
	withMeta := keyed("uuid-1", "payment-1", "payload")
	bare := message.NewMessage("uuid-2", []byte("payload"))
	failing := KeyFunc(func(*message.Message) (string, error) { return "", errTransient })
	cases := []struct {
		name    string
		f       KeyFunc
		msg     *message.Message
		want    string
		wantErr error
	}{
		{"metadata", KeyFromMetadata(MetadataKey), withMeta, "payment-1", nil},
		{"metadata falls back to uuid", KeyFromMetadata(MetadataKey), bare, "uuid-2", nil},
		{"neither metadata nor uuid", KeyFromMetadata(MetadataKey), message.NewMessage("", nil), "", receiver.ErrNoKey},
		{"content hash", KeyFromContentHash(), bare,
			"239f59ed55e737c77147cf55ad0c1b030b6d7ee748a7426952f9b852d5a935e5", nil},
		{"composite", CompositeKey(KeyFromMetadata(MetadataKey), KeyFromMetadata("tenant")), withMeta,
			`["payment-1","uuid-1"]`, nil},
		{"composite part fails", CompositeKey(KeyFromContentHash(), failing), bare, "", errTransient},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.f(tc.msg)
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Fatalf("key = %q, %v; want %q, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestCompositeKeyIsUnambiguous(t *testing.T) {
	meta := func(a, b string) *message.Message {
		m := message.NewMessage("u", nil)
		m.Metadata.Set("a", a)
		m.Metadata.Set("b", b)
		return m
	}
	key := CompositeKey(KeyFromMetadata("a"), KeyFromMetadata("b"))
	k1, _ := key(meta("x:y", "z"))
	k2, _ := key(meta("x", "y:z"))
	if k1 == k2 {
		t.Fatalf("parts (x:y, z) and (x, y:z) share the key %q", k1)
	}
}

func TestPayloadFingerprint(t *testing.T) {
	a := PayloadFingerprint(message.NewMessage("1", []byte("same")))
	b := PayloadFingerprint(message.NewMessage("2", []byte("same")))
	c := PayloadFingerprint(message.NewMessage("1", []byte("other")))
	if string(a) != string(b) || string(a) == string(c) || len(a) != 32 {
		t.Fatal("fingerprint must be the SHA-256 of the payload alone")
	}
}

// Metadata may carry any bytes; a JSON string would turn every invalid
// byte into U+FFFD and so give two messages one key (found by
// FuzzMessageKey).
func TestCompositeKeyKeepsBinaryPartsApart(t *testing.T) {
	key := CompositeKey(KeyFromMetadata("a"), KeyFromMetadata("b"))
	msg := func(b string) *message.Message {
		m := message.NewMessage("u", nil)
		m.Metadata.Set("a", "0")
		m.Metadata.Set("b", b)
		return m
	}
	k1, _ := key(msg("\xc6"))
	k2, _ := key(msg("\xb0"))
	k3, _ := key(msg(`{"hex":"c6"}`))
	if k1 == k2 || k1 == k3 || k1 != `["0",{"hex":"c6"}]` {
		t.Fatalf("parts \\xc6, \\xb0 and a look-alike string give keys %q, %q, %q", k1, k2, k3)
	}
	if k, _ := key(msg("ключ")); k != `["0","ключ"]` {
		t.Fatalf("a valid UTF-8 part changed its key: %q", k)
	}
}
