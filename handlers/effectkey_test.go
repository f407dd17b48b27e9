package handlers_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/memory"
	"github.com/onceflow/onceflow/handlers/provider"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/receiver"
	memstore "github.com/onceflow/onceflow/stores/memory"
)

// The window effect keys close. In lease mode charge_payment charges the
// provider and then fails (its ledger write), so the receiver releases the
// key and the retry runs the handler again, charging again. With the
// payments domain's client, whose requests carry the run's effect key, the
// provider answers the retry with the first charge: one charge. With a
// client without effect keys, as a careless integration has, the provider
// sees two unrelated requests: two charges.
func TestEffectKeyChargesOnceAcrossARetry(t *testing.T) {
	t.Parallel()
	s, err := provider.Listen(t.Context(), "127.0.0.1:0", provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	store := memstore.New(memstore.Config{})
	t.Cleanup(func() { _ = store.Close() })
	rcv, err := receiver.New(receiver.Config{Store: store, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, payment string
		transport     http.RoundTripper
		want          int64 // charges at the provider
	}{
		{"with effect keys", "pay-keyed", idempotencykey.EffectKeys(nil), 1},
		{"without effect keys", "pay-unkeyed", http.DefaultTransport, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := handlers.PaymentRequested{PaymentID: tc.payment, CustomerID: "cus-1", AmountCents: 1250, Currency: "EUR", RequestedAt: time.Now().UTC()}
			charger := &recordingCharger{next: provider.NewClient(s.URL(), &http.Client{Transport: tc.transport})}
			ledger := &failFirstCharge{Ledger: memory.NewLedger()}
			h := handlers.NewMessageHandlers(ledger, charger, nil)
			msg := paymentRequestedMessage(t, req)

			// The first delivery charges, fails to record the charge and is
			// released; its redelivery runs again, and succeeds.
			for attempt := 1; attempt <= 2; attempt++ {
				_, err := rcv.Execute(t.Context(), handlers.ChargePaymentHandler, req.PaymentID, msg.Payload,
					func(ctx context.Context) ([]byte, error) {
						msg.SetContext(ctx)
						_, err := h.ChargePayment(msg)
						return nil, err
					})
				if failed := err != nil; failed != (attempt == 1) {
					t.Fatalf("attempt %d: err = %v", attempt, err)
				}
				if attempt == 1 && !errors.Is(err, errLedgerDown) {
					t.Fatalf("attempt 1: err = %v, want the ledger's", err)
				}
			}

			got, err := s.Count(t.Context(), req.PaymentID)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("the provider made %d charges, want %d", got, tc.want)
			}
			charges := charger.charges()
			if len(charges) != 2 {
				t.Fatalf("the handler charged %d times, want 2 (one per run)", len(charges))
			}
			sameCharge := charges[0].ID == charges[1].ID
			if sameCharge != (tc.want == 1) || charges[1].Replayed != (tc.want == 1) {
				t.Errorf("second run's charge %s (replayed %v) after the first's %s", charges[1].ID, charges[1].Replayed, charges[0].ID)
			}
			// The ledger keeps the charge the provider answered the run
			// that succeeded with.
			if ledger.recorded != charges[1].ID {
				t.Errorf("the ledger recorded charge %q, want the provider's %q", ledger.recorded, charges[1].ID)
			}
		})
	}
}

// recordingCharger is next, remembering every charge it answered with.
type recordingCharger struct {
	next *provider.Client
	mu   sync.Mutex
	made []provider.Charge
}

func (c *recordingCharger) Charge(ctx context.Context, req provider.ChargeRequest) (provider.Charge, error) {
	ch, err := c.next.Charge(ctx, req)
	if err == nil {
		c.mu.Lock()
		c.made = append(c.made, ch)
		c.mu.Unlock()
	}
	return ch, err
}

func (c *recordingCharger) charges() []provider.Charge {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]provider.Charge(nil), c.made...)
}

// failFirstCharge is a ledger whose first AppendCharge fails with
// errLedgerDown, after the charge was made: the moment of a crash between
// an effect and its record.
type failFirstCharge struct {
	handlers.Ledger
	mu       sync.Mutex
	failed   bool
	recorded string // the charge id of the AppendCharge that succeeded
}

func (l *failFirstCharge) AppendCharge(ctx context.Context, p handlers.Payment, chargeID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.failed {
		l.failed = true
		return errLedgerDown
	}
	l.recorded = chargeID
	return l.Ledger.AppendCharge(ctx, p, chargeID)
}
