package consume

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/middleware/signing"
)

// With RouterConfig.Signer, a producer without the secret cannot pre-empt a
// key: its message goes to the poison topic before anything is claimed,
// and the trusted producer's message with the same key then runs once.
// Without a Signer the same message takes the key and the trusted one is
// poisoned as a reused key: the effect it asked for never happens.
func TestInstallSignerStopsAPreemptingProducer(t *testing.T) {
	for _, verify := range []bool{true, false} {
		t.Run(fmt.Sprintf("signer=%v", verify), func(t *testing.T) {
			signer := newSigner(t, bytes.Repeat([]byte("n"), signing.MinSecretLen))
			r, rec := receivertest.NewReceiver(t, receiver.Config{})
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
			cfg := RouterConfig{Receiver: r, Poison: &Poison{Publisher: ps}, Retry: &Retry{Interval: time.Millisecond}}
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
			reason := got.Metadata.Get(middleware.ReasonForPoisonedKey)

			if verify {
				if got.UUID != "forged" || !strings.Contains(reason, "bad_signature") || got.Metadata.Get(PoisonClassKey) != ClassBadSignature {
					t.Fatalf("poisoned %s (%q), want the forged message for bad_signature", got.UUID, reason)
				}
				if len(charged) != 1 || charged[0] != "to the merchant" || rec.Total() != 1 {
					t.Fatalf("charged %q with %d outcomes, want the merchant's once, and the forged message claimed by no handler, the poison reader's included", charged, rec.Total())
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

func newSigner(t *testing.T, secret []byte) *signing.Signer {
	t.Helper()
	s, err := signing.New(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
