package signing_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/middleware/signing"
)

var (
	oldSecret = bytes.Repeat([]byte("o"), signing.MinSecretLen)
	newSecret = bytes.Repeat([]byte("n"), signing.MinSecretLen)
)

// signedAt is when the tests' messages are signed.
var signedAt = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a clock that reads what its test sets.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newSigner(t *testing.T, secrets ...[]byte) *signing.Signer {
	t.Helper()
	return newSignerOf(t, signing.Config{Secrets: secrets})
}

func newSignerOf(t *testing.T, cfg signing.Config) *signing.Signer {
	t.Helper()
	s, err := signing.NewSigner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A signature holds only for the topic, UUID, key, signing time and
// payload it was made for, under a secret the verifier holds, for the max
// age after it was made and from a little before (the clock skew).
func TestSignerVerify(t *testing.T) {
	const maxAge = 15 * time.Minute
	at := &clock{}
	verifier := func(secrets ...[]byte) *signing.Signer {
		return newSignerOf(t, signing.Config{Secrets: secrets, MaxAge: maxAge, Now: at.now})
	}
	signer := verifier(oldSecret)
	tests := []struct {
		name   string
		topic  string
		change func(*message.Message)
		by     *signing.Signer
		after  time.Duration // from signing to verifying
		want   string        // empty: verifies
	}{
		{name: "as signed", topic: "srvprd.payments"},
		{name: "another topic", topic: "srvprd.refunds", want: "no secret signed"},
		{name: "another environment's topic", topic: "srvstg.payments", want: "no secret signed"},
		{name: "the topic without its prefix", topic: "payments", want: "no secret signed"},
		{name: "another uuid", topic: "srvprd.payments", change: func(m *message.Message) { m.UUID = "msg-2" }, want: "no secret signed"},
		{name: "another key", topic: "srvprd.payments", change: func(m *message.Message) { m.Metadata.Set(consume.MetadataKey, "payment-2") }, want: "no secret signed"},
		{name: "key removed", topic: "srvprd.payments", change: func(m *message.Message) { m.Metadata.Set(consume.MetadataKey, "") }, want: "no secret signed"},
		{name: "another payload", topic: "srvprd.payments", change: func(m *message.Message) { m.Payload = []byte(`{"amount":1}`) }, want: "no secret signed"},
		{name: "a later signing time", topic: "srvprd.payments", change: setSignedAt(signedAt.Add(time.Hour)), after: 2 * time.Hour, want: "no secret signed"},
		{name: "unsigned", topic: "srvprd.payments", change: func(m *message.Message) { delete(m.Metadata, signing.MetadataSignature) }, want: "no " + signing.MetadataSignature},
		{name: "not base64url", topic: "srvprd.payments", change: func(m *message.Message) { m.Metadata.Set(signing.MetadataSignature, "%%%") }, want: "not base64url"},
		{name: "no signing time, as an earlier format", topic: "srvprd.payments", change: func(m *message.Message) { delete(m.Metadata, signing.MetadataSignedAt) }, want: "earlier format"},
		{name: "signing time not milliseconds", topic: "srvprd.payments", change: func(m *message.Message) { m.Metadata.Set(signing.MetadataSignedAt, "2030-01-02T03:04:05Z") }, want: "not Unix milliseconds"},
		{name: "another secret", topic: "srvprd.payments", by: verifier(newSecret), want: "no secret signed"},
		{name: "the old secret while rotating", topic: "srvprd.payments", by: verifier(newSecret, oldSecret)},
		{name: "other metadata changed", topic: "srvprd.payments", change: func(m *message.Message) { m.Metadata.Set("traceparent", "00-x") }},
		{name: "at the max age", topic: "srvprd.payments", after: maxAge},
		{name: "past the max age", topic: "srvprd.payments", after: maxAge + time.Millisecond, want: "signature expired"},
		{name: "past the max age, while rotating", topic: "srvprd.payments", by: verifier(newSecret, oldSecret), after: 20 * time.Minute, want: "signature expired"},
		{name: "ahead within the clock skew", topic: "srvprd.payments", after: -signing.ClockSkew},
		{name: "ahead beyond the clock skew", topic: "srvprd.payments", after: -signing.ClockSkew - time.Millisecond, want: "ahead of this clock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at.t = signedAt
			msg := keyed("msg-1", "payment-1", `{"amount":100}`)
			signer.Sign("srvprd.payments", msg)
			if tt.change != nil {
				tt.change(msg)
			}
			by := signer
			if tt.by != nil {
				by = tt.by
			}
			at.t = signedAt.Add(tt.after)
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

// An expired signature's error says how old it is and what the limit is:
// it is the reason the poison topic shows.
func TestSignerSaysHowOld(t *testing.T) {
	at := &clock{t: signedAt}
	signer := newSignerOf(t, signing.Config{Secrets: [][]byte{newSecret}, MaxAge: 15 * time.Minute, Now: at.now})
	msg := keyed("msg-1", "payment-1", "p")
	signer.Sign("payments", msg)
	at.t = signedAt.Add(20 * time.Minute)
	err := signer.Verify("payments", msg)
	if want := "signature expired: signed 20m0s ago, max age 15m0s"; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("Verify: %v, want an error ending %q", err, want)
	}
}

// Without a max age a signature holds for the receiver's default TTL: a
// copy of a message whose record has expired is refused, not run again.
func TestSignerDefaultMaxAge(t *testing.T) {
	at := &clock{t: signedAt}
	signer := newSignerOf(t, signing.Config{Secrets: [][]byte{newSecret}, Now: at.now})
	msg := keyed("msg-1", "payment-1", "p")
	signer.Sign("payments", msg)
	at.t = signedAt.Add(receiver.DefaultTTL)
	if err := signer.Verify("payments", msg); err != nil {
		t.Fatalf("Verify at the receiver's TTL: %v", err)
	}
	at.t = at.t.Add(time.Second)
	if err := signer.Verify("payments", msg); !errors.Is(err, signing.ErrBadSignature) {
		t.Fatalf("Verify past the receiver's TTL: %v, want ErrBadSignature", err)
	}
}

// The signed text keeps its parts apart: moving bytes between the UUID and
// the key changes the signature.
func TestSignerPartsAreUnambiguous(t *testing.T) {
	signer := newSigner(t, oldSecret)
	a := keyed("ab", "c", "p")
	signer.Sign("t", a)
	b := keyed("a", "bc", "p")
	for _, field := range []string{signing.MetadataSignature, signing.MetadataSignedAt} {
		b.Metadata.Set(field, a.Metadata.Get(field))
	}
	if err := signer.Verify("t", b); !errors.Is(err, signing.ErrBadSignature) {
		t.Fatalf("uuid %q key %q verified with the signature of uuid %q key %q: %v", b.UUID, "bc", a.UUID, "c", err)
	}
}

// A short secret, no secret and a negative max age are refused, and the
// error does not show the secret.
func TestNewSignerRefuses(t *testing.T) {
	short := "tooshort-secret"
	for _, cfg := range []signing.Config{
		{},
		{Secrets: [][]byte{[]byte(short)}},
		{Secrets: [][]byte{newSecret, []byte(short)}},
		{Secrets: [][]byte{newSecret}, MaxAge: -time.Second},
	} {
		_, err := signing.NewSigner(cfg)
		if err == nil {
			t.Fatalf("NewSigner(%d secrets, max age %v) accepted", len(cfg.Secrets), cfg.MaxAge)
		}
		if strings.Contains(err.Error(), short) {
			t.Fatalf("the error shows the secret: %v", err)
		}
	}
}

func ExampleSigner() {
	secret := []byte("a secret of 32 bytes or more, shared")
	signer, err := signing.NewSigner(signing.Config{Secrets: [][]byte{secret}, MaxAge: 15 * time.Minute})
	if err != nil {
		panic(err)
	}
	msg := message.NewMessage("msg-1", []byte(`{"amount":100}`))
	msg.Metadata.Set(consume.MetadataKey, "payment-1")
	signer.Sign("payments", msg) // or publish through signer.Publisher(pub)

	fmt.Println(signer.Verify("payments", msg) == nil)
	fmt.Println(errors.Is(signer.Verify("staging.payments", msg), signing.ErrBadSignature))
	msg.Payload = []byte(`{"amount":1}`)
	fmt.Println(errors.Is(signer.Verify("payments", msg), signing.ErrBadSignature))
	// Output:
	// true
	// true
	// true
}

// setSignedAt returns a change of a message's signing time to t.
func setSignedAt(t time.Time) func(*message.Message) {
	return func(m *message.Message) { m.Metadata.Set(signing.MetadataSignedAt, fmt.Sprint(t.UnixMilli())) }
}

// keyed returns a message with an idempotency key in its metadata.
func keyed(uuid, key, payload string) *message.Message {
	msg := message.NewMessage(uuid, []byte(payload))
	msg.Metadata.Set(consume.MetadataKey, key)
	return msg
}
