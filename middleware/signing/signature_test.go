package signing_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/signing"
)

var (
	oldSecret = bytes.Repeat([]byte("o"), signing.MinSecretLen)
	newSecret = bytes.Repeat([]byte("n"), signing.MinSecretLen)
)

func newSigner(t *testing.T, secrets ...[]byte) *signing.Signer {
	t.Helper()
	s, err := signing.New(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A signature holds only for the topic, UUID, key and payload it was made
// for, under a secret the verifier holds.
func TestSignerVerify(t *testing.T) {
	signer := newSigner(t, oldSecret)
	signed := func() *message.Message {
		msg := keyed("msg-1", "payment-1", `{"amount":100}`)
		signer.Sign("payments", msg)
		return msg
	}
	tests := []struct {
		name   string
		topic  string
		change func(*message.Message)
		by     *signing.Signer
		want   string // empty: verifies
	}{
		{name: "as signed", topic: "payments"},
		{name: "another topic", topic: "refunds", want: "no secret signed"},
		{name: "another uuid", topic: "payments", change: func(m *message.Message) { m.UUID = "msg-2" }, want: "no secret signed"},
		{name: "another key", topic: "payments", change: func(m *message.Message) { m.Metadata.Set(consume.MetadataKey, "payment-2") }, want: "no secret signed"},
		{name: "key removed", topic: "payments", change: func(m *message.Message) { m.Metadata.Set(consume.MetadataKey, "") }, want: "no secret signed"},
		{name: "another payload", topic: "payments", change: func(m *message.Message) { m.Payload = []byte(`{"amount":1}`) }, want: "no secret signed"},
		{name: "unsigned", topic: "payments", change: func(m *message.Message) { delete(m.Metadata, signing.MetadataSignature) }, want: "no " + signing.MetadataSignature},
		{name: "not base64url", topic: "payments", change: func(m *message.Message) { m.Metadata.Set(signing.MetadataSignature, "%%%") }, want: "not base64url"},
		{name: "another secret", topic: "payments", by: newSigner(t, newSecret), want: "no secret signed"},
		{name: "the old secret while rotating", topic: "payments", by: newSigner(t, newSecret, oldSecret)},
		{name: "other metadata changed", topic: "payments", change: func(m *message.Message) { m.Metadata.Set("traceparent", "00-x") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := signed()
			if tt.change != nil {
				tt.change(msg)
			}
			by := signer
			if tt.by != nil {
				by = tt.by
			}
			err := by.Verify(tt.topic, msg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Verify: %v, want nil", err)
			case tt.want != "" && (!errors.Is(err, signing.ErrBadSignature) || !consume.Permanent(err) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Verify: %v, want a permanent ErrBadSignature saying %q", err, tt.want)
			}
		})
	}
}

// The signed text keeps its parts apart: moving bytes between the UUID and
// the key changes the signature.
func TestSignerPartsAreUnambiguous(t *testing.T) {
	signer := newSigner(t, oldSecret)
	a := keyed("ab", "c", "p")
	signer.Sign("t", a)
	b := keyed("a", "bc", "p")
	b.Metadata.Set(signing.MetadataSignature, a.Metadata.Get(signing.MetadataSignature))
	if err := signer.Verify("t", b); !errors.Is(err, signing.ErrBadSignature) {
		t.Fatalf("uuid %q key %q verified with the signature of uuid %q key %q: %v", b.UUID, "bc", a.UUID, "c", err)
	}
}

// A short secret is refused, and the error does not show it.
func TestNewSignerRefuses(t *testing.T) {
	short := "tooshort-secret"
	for _, secrets := range [][][]byte{nil, {[]byte(short)}, {newSecret, []byte(short)}} {
		_, err := signing.New(secrets...)
		if err == nil {
			t.Fatalf("New(%d secrets) accepted", len(secrets))
		}
		if strings.Contains(err.Error(), short) {
			t.Fatalf("the error shows the secret: %v", err)
		}
	}
}

func ExampleSigner() {
	secret := []byte("a secret of 32 bytes or more, shared")
	signer, err := signing.New(secret)
	if err != nil {
		panic(err)
	}
	msg := message.NewMessage("msg-1", []byte(`{"amount":100}`))
	msg.Metadata.Set(consume.MetadataKey, "payment-1")
	signer.Sign("payments", msg) // or publish through signer.Publisher(pub)

	fmt.Println(signer.Verify("payments", msg) == nil)
	msg.Payload = []byte(`{"amount":1}`)
	fmt.Println(errors.Is(signer.Verify("payments", msg), signing.ErrBadSignature))
	// Output:
	// true
	// true
}

// keyed returns a message with an idempotency key in its metadata.
func keyed(uuid, key, payload string) *message.Message {
	msg := message.NewMessage(uuid, []byte(payload))
	msg.Metadata.Set(consume.MetadataKey, key)
	return msg
}
