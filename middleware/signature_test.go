package middleware

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"
)

var (
	oldSecret = bytes.Repeat([]byte("o"), MinSecretLen)
	newSecret = bytes.Repeat([]byte("n"), MinSecretLen)
)

func newSigner(t *testing.T, secrets ...[]byte) *Signer {
	t.Helper()
	s, err := NewSigner(secrets...)
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
		by     *Signer
		want   string // empty: verifies
	}{
		{name: "as signed", topic: "payments"},
		{name: "another topic", topic: "refunds", want: "no secret signed"},
		{name: "another uuid", topic: "payments", change: func(m *message.Message) { m.UUID = "msg-2" }, want: "no secret signed"},
		{name: "another key", topic: "payments", change: func(m *message.Message) { m.Metadata.Set(MetadataKey, "payment-2") }, want: "no secret signed"},
		{name: "key removed", topic: "payments", change: func(m *message.Message) { m.Metadata.Set(MetadataKey, "") }, want: "no secret signed"},
		{name: "another payload", topic: "payments", change: func(m *message.Message) { m.Payload = []byte(`{"amount":1}`) }, want: "no secret signed"},
		{name: "unsigned", topic: "payments", change: func(m *message.Message) { delete(m.Metadata, MetadataSignature) }, want: "no " + MetadataSignature},
		{name: "not base64url", topic: "payments", change: func(m *message.Message) { m.Metadata.Set(MetadataSignature, "%%%") }, want: "not base64url"},
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
			case tt.want != "" && (!errors.Is(err, ErrBadSignature) || !Permanent(err) || !strings.Contains(err.Error(), tt.want)):
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
	b.Metadata.Set(MetadataSignature, a.Metadata.Get(MetadataSignature))
	if err := signer.Verify("t", b); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("uuid %q key %q verified with the signature of uuid %q key %q: %v", b.UUID, "bc", a.UUID, "c", err)
	}
}

// A short secret is refused, and the error does not show it.
func TestNewSignerRefuses(t *testing.T) {
	short := "tooshort-secret"
	for _, secrets := range [][][]byte{nil, {[]byte(short)}, {newSecret, []byte(short)}} {
		_, err := NewSigner(secrets...)
		if err == nil {
			t.Fatalf("NewSigner(%d secrets) accepted", len(secrets))
		}
		if strings.Contains(err.Error(), short) {
			t.Fatalf("the error shows the secret: %v", err)
		}
	}
}

// With RouterConfig.Signer, a producer without the secret cannot pre-empt a
// key: its message goes to the poison topic before anything is claimed,
// and the trusted producer's message with the same key then runs once.
// Without a Signer the same message takes the key and the trusted one is
// poisoned as a reused key: the effect it asked for never happens.
func TestInstallSignerStopsAPreemptingProducer(t *testing.T) {
	for _, verify := range []bool{true, false} {
		t.Run(fmt.Sprintf("signer=%v", verify), func(t *testing.T) {
			signer := newSigner(t, newSecret)
			r, rec := newReceiver(t, Config{})
			ps := newPubSub(t, true)
			poisoned := collect(t, ps, "poison")
			router := newRouter(t)
			var charged []string
			var poisonRead atomic.Int32
			router.AddConsumerHandler("charge", "payments", ps, func(msg *message.Message) error {
				charged = append(charged, string(msg.Payload))
				return nil
			})
			router.AddConsumerHandler("poison_reader", "poison", ps, func(*message.Message) error { poisonRead.Add(1); return nil })
			cfg := RouterConfig{Receiver: r, PoisonPublisher: ps, RetryInterval: time.Millisecond}
			if verify {
				cfg.Signer = signer
			}
			if err := Install(router, cfg); err != nil {
				t.Fatal(err)
			}
			run(t, router)

			publish(t, ps, "payments", keyed("forged", "payment-1", "to the attacker"))
			publish(t, signer.Publisher(ps), "payments", keyed("real", "payment-1", "to the merchant"))
			got := receive(t, poisoned, 1)[0]
			reason := got.Metadata.Get(wmmw.ReasonForPoisonedKey)

			if verify {
				if got.UUID != "forged" || !strings.Contains(reason, "bad_signature") {
					t.Fatalf("poisoned %s (%q), want the forged message for bad_signature", got.UUID, reason)
				}
				if len(charged) != 1 || charged[0] != "to the merchant" || rec.total() != 2 {
					t.Fatalf("charged %q with %d outcomes, want the merchant's once, the poison reader's once, and the forged message never claimed", charged, rec.total())
				}
			} else {
				if got.UUID != "real" || !strings.Contains(reason, "fingerprint_mismatch") {
					t.Fatalf("poisoned %s (%q), want the real message for fingerprint_mismatch", got.UUID, reason)
				}
				if len(charged) != 1 || charged[0] != "to the attacker" {
					t.Fatalf("charged %q, want the attacker's alone: the window the signer closes", charged)
				}
			}
			if poisonRead.Load() != 1 {
				t.Fatalf("the poison topic's handler read %d messages, want the unsigned poisoned one too", poisonRead.Load())
			}
		})
	}
}

func ExampleSigner() {
	secret := []byte("a secret of 32 bytes or more, shared")
	signer, err := NewSigner(secret)
	if err != nil {
		panic(err)
	}
	msg := message.NewMessage("msg-1", []byte(`{"amount":100}`))
	msg.Metadata.Set(MetadataKey, "payment-1")
	signer.Sign("payments", msg) // or publish through signer.Publisher(pub)

	fmt.Println(signer.Verify("payments", msg) == nil)
	msg.Payload = []byte(`{"amount":1}`)
	fmt.Println(errors.Is(signer.Verify("payments", msg), ErrBadSignature))
	// Output:
	// true
	// true
}
