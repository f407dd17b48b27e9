package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/ledgertest"
	"github.com/onceflow/onceflow/handlers/memory"
	"github.com/onceflow/onceflow/handlers/provider"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
)

func paymentRequestedMessage(t *testing.T, e handlers.PaymentRequested) *message.Message {
	t.Helper()
	msg, err := e.Message()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// charger starts a payment provider on a loopback port, stopped when t
// ends, and returns it with its client, which sends the effect key of a
// receiver's run ([idempotencykey.EffectKeys]) as the payments domain's does.
func charger(t *testing.T) (*provider.Server, *provider.Client) {
	t.Helper()
	s, err := provider.Listen(t.Context(), "127.0.0.1:0", provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, provider.NewClient(s.URL(), &http.Client{Transport: idempotencykey.EffectKeys(nil)})
}

// assertCharges requires the provider to have made want charges of the
// payment whose key is paymentKey.
func assertCharges(t *testing.T, c *provider.Client, paymentKey string, want int64) {
	t.Helper()
	got, err := c.Count(t.Context(), paymentKey)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("the provider made %d charges of payment %s, want %d", got, paymentKey, want)
	}
}

func TestChargePayment(t *testing.T) {
	t.Parallel()
	ledger := memory.NewLedger()
	_, c := charger(t)
	h := handlers.NewMessageHandlers(ledger, c, nil)
	req := handlers.PaymentRequested{PaymentID: "pay-1", CustomerID: "cus-1", AmountCents: 1250, Currency: "EUR", RequestedAt: time.Now().UTC()}
	in := paymentRequestedMessage(t, req)
	wmmw.SetCorrelationID("corr-1", in)

	out, err := h.ChargePayment(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 {
		t.Fatalf("produced %d messages, want 1", len(out))
	}
	msg := out[0]
	charged, err := handlers.DecodePaymentCharged(msg.Payload)
	if err != nil {
		t.Fatalf("produced message: %v", err)
	}
	if charged.PaymentID != req.PaymentID || charged.CustomerID != req.CustomerID ||
		charged.AmountCents != req.AmountCents || charged.Currency != req.Currency {
		t.Errorf("PaymentCharged %+v does not match PaymentRequested %+v", charged, req)
	}
	if charged.ChargedAt.IsZero() {
		t.Error("charged_at is zero")
	}
	if !strings.HasPrefix(charged.ChargeID, "ch_") {
		t.Errorf("charge id %q, want the provider's", charged.ChargeID)
	}
	assertCharges(t, c, req.PaymentID, 1)
	if msg.UUID == "" || msg.UUID == in.UUID {
		t.Errorf("produced UUID %q, want a new one", msg.UUID)
	}
	if got := msg.Metadata.Get(consume.MetadataKey); got != req.PaymentID {
		t.Errorf("idempotency key = %q, want %q", got, req.PaymentID)
	}
	if got := wmmw.MessageCorrelationID(msg); got != "corr-1" {
		t.Errorf("correlation id = %q, want corr-1", got)
	}
	ledgertest.AssertState(t, ledger, "", handlers.PaymentState{PaymentID: req.PaymentID, Status: handlers.StatusCharged, Charges: 1})

	// Without the idempotent receiver, a redelivery charges again: the
	// handler is naive on purpose, and outside a receiver's run there is
	// no effect key, so the provider charges again, with a new charge id.
	again, err := h.ChargePayment(in)
	if err != nil {
		t.Fatal(err)
	}
	second, err := handlers.DecodePaymentCharged(again[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	if second.ChargeID == charged.ChargeID {
		t.Errorf("charge id %q repeated", second.ChargeID)
	}
	ledgertest.AssertState(t, ledger, "", handlers.PaymentState{PaymentID: req.PaymentID, Status: handlers.StatusCharged, Charges: 2})
	assertCharges(t, c, req.PaymentID, 2)
}

// paymentChargedMessage is the PaymentCharged of payment pay-1.
func paymentChargedMessage(t *testing.T) *message.Message {
	t.Helper()
	msg, err := handlers.PaymentCharged{
		PaymentID: "pay-1", CustomerID: "cus-1", AmountCents: 1250, Currency: "EUR",
		ChargeID: "ch-1", ChargedAt: time.Now().UTC(),
	}.Message()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func TestNotifyCustomer(t *testing.T) {
	t.Parallel()
	ledger := memory.NewLedger()
	h := handlers.NewMessageHandlers(ledger, nil, nil)
	if err := h.NotifyCustomer(paymentChargedMessage(t)); err != nil {
		t.Fatal(err)
	}
	ledgertest.AssertState(t, ledger, "", handlers.PaymentState{PaymentID: "pay-1", Status: handlers.StatusNotified, Notifications: 1})
}

func TestIssueReceipt(t *testing.T) {
	t.Parallel()
	ledger := memory.NewLedger()
	h := handlers.NewMessageHandlers(ledger, nil, nil)
	msg := paymentChargedMessage(t)
	if err := h.IssueReceipt(msg); err != nil {
		t.Fatal(err)
	}
	ledgertest.AssertState(t, ledger, "", handlers.PaymentState{PaymentID: "pay-1", Status: handlers.StatusCharged, Receipts: 1})

	// Naive on purpose: without the idempotent receiver, a redelivery
	// issues a second receipt.
	if err := h.IssueReceipt(msg); err != nil {
		t.Fatal(err)
	}
	ledgertest.AssertState(t, ledger, "", handlers.PaymentState{PaymentID: "pay-1", Status: handlers.StatusCharged, Receipts: 2})
}

func TestMessageHandlersRejectMalformedMessages(t *testing.T) {
	t.Parallel()
	ledger := memory.NewLedger()
	s, c := charger(t)
	h := handlers.NewMessageHandlers(ledger, c, nil)
	payload, err := json.Marshal(map[string]any{"payment_id": "pay-1", "customer_id": "cus-1", "amount_cents": -1, "currency": "EUR", "charge_id": "ch-1"})
	if err != nil {
		t.Fatal(err)
	}
	msg := message.NewMessage("uuid-1", payload)

	out, err := h.ChargePayment(msg)
	assertMalformed(t, err, "amount_cents")
	if out != nil {
		t.Errorf("produced %d messages for a malformed one", len(out))
	}
	assertMalformed(t, h.NotifyCustomer(msg), "amount_cents")
	assertMalformed(t, h.IssueReceipt(msg), "amount_cents")
	ledgertest.AssertSummary(t, ledger, "", handlers.Summary{})
	if n, err := s.Count(t.Context(), ""); err != nil || n != 0 {
		t.Errorf("the provider made %d charges (%v), want none", n, err)
	}
}

func TestMessageHandlersReturnLedgerErrorsAsRetryable(t *testing.T) {
	t.Parallel()
	_, c := charger(t)
	h := handlers.NewMessageHandlers(failingLedger{}, c, nil)
	in := paymentRequestedMessage(t, handlers.PaymentRequested{PaymentID: "pay-1", CustomerID: "cus-1", AmountCents: 1, Currency: "EUR"})
	_, err := h.ChargePayment(in)
	if !errors.Is(err, errLedgerDown) || errors.Is(err, handlers.ErrMalformed) {
		t.Errorf("ChargePayment: err = %v, want the ledger's error, not ErrMalformed", err)
	}
	charged, err := handlers.PaymentCharged{PaymentID: "pay-1", CustomerID: "cus-1", AmountCents: 1, Currency: "EUR", ChargeID: "ch-1"}.Message()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.NotifyCustomer(charged); !errors.Is(err, errLedgerDown) || errors.Is(err, handlers.ErrMalformed) {
		t.Errorf("NotifyCustomer: err = %v, want the ledger's error, not ErrMalformed", err)
	}
	if err := h.IssueReceipt(charged); !errors.Is(err, errLedgerDown) || errors.Is(err, handlers.ErrMalformed) {
		t.Errorf("IssueReceipt: err = %v, want the ledger's error, not ErrMalformed", err)
	}
}

func TestMessageHandlersUseMessageContext(t *testing.T) {
	t.Parallel()
	_, c := charger(t)
	h := handlers.NewMessageHandlers(memory.NewLedger(), c, nil)
	in := paymentRequestedMessage(t, handlers.PaymentRequested{PaymentID: "pay-1", CustomerID: "cus-1", AmountCents: 1, Currency: "EUR"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in.SetContext(ctx)
	if _, err := h.ChargePayment(in); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

var errLedgerDown = errors.New("ledger down")

// failingLedger fails every call with errLedgerDown.
type failingLedger struct{}

func (failingLedger) RecordPayment(context.Context, handlers.Payment) (time.Time, error) {
	return time.Time{}, errLedgerDown
}
func (failingLedger) AppendCharge(context.Context, handlers.Payment, string) error {
	return errLedgerDown
}
func (failingLedger) AppendNotification(context.Context, handlers.Payment, string) error {
	return errLedgerDown
}
func (failingLedger) AppendReceipt(context.Context, handlers.Payment, string) error {
	return errLedgerDown
}
func (failingLedger) Payment(context.Context, string, string) (handlers.PaymentState, error) {
	return handlers.PaymentState{}, errLedgerDown
}
func (failingLedger) Summary(context.Context, string) (handlers.Summary, error) {
	return handlers.Summary{}, errLedgerDown
}

// The handlers act on the payment of the event's client, and carry the
// client on: another client's payment of the same id is untouched.
func TestMessageHandlersKeepTheClient(t *testing.T) {
	t.Parallel()
	ledger := memory.NewLedger()
	_, c := charger(t)
	h := handlers.NewMessageHandlers(ledger, c, nil)
	other := handlers.Payment{Client: "client-b", ID: "pay-1", CustomerID: "cus-b", AmountCents: 5, Currency: "USD"}
	ledgertest.MustRecord(t, ledger, other)

	req := handlers.PaymentRequested{Client: "client-a", PaymentID: "pay-1", CustomerID: "cus-1", AmountCents: 1250, Currency: "EUR", RequestedAt: time.Now().UTC()}
	out, err := h.ChargePayment(paymentRequestedMessage(t, req))
	if err != nil {
		t.Fatal(err)
	}
	charged, err := handlers.DecodePaymentCharged(out[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	if charged.Client != "client-a" || out[0].Metadata.Get(consume.MetadataKey) != "client-a/pay-1" {
		t.Errorf("PaymentCharged of client %q, key %q; want client-a, client-a/pay-1", charged.Client, out[0].Metadata.Get(consume.MetadataKey))
	}
	if err := h.NotifyCustomer(out[0]); err != nil {
		t.Fatal(err)
	}
	if err := h.IssueReceipt(out[0]); err != nil {
		t.Fatal(err)
	}
	ledgertest.AssertState(t, ledger, "client-a", handlers.PaymentState{PaymentID: "pay-1", Status: handlers.StatusNotified, Charges: 1, Notifications: 1, Receipts: 1})
	ledgertest.AssertState(t, ledger, "client-b", handlers.PaymentState{PaymentID: "pay-1", Status: handlers.StatusAccepted})
	ledgertest.AssertNotFound(t, ledger, "", "pay-1")
	assertCharges(t, c, "client-a/pay-1", 1)
	assertCharges(t, c, "pay-1", 0)
}
