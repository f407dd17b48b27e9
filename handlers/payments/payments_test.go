package payments_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/app/apptest/faults"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/payments"
	"github.com/onceflow/onceflow/handlers/provider"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/consume"
)

// The service charges at the provider PAYMENT_PROVIDER_URL names, once
// per payment however often the payment is sent.
func TestChargesAtTheProviderOnce(t *testing.T) {
	t.Parallel()
	p := listen(t)
	s := apptest.Start(t, payments.Domain(), "PAYMENT_PROVIDER_URL="+p.URL())
	ids := send(t, s, 10, 3)
	waitForLedger(t, s, handlers.Summary{Payments: 10, Charges: 10, Notifications: 10, Receipts: 10})
	assertCharges(t, p, ids, 1)
}

// A run that charged and then failed is retried, and charges again. The
// provider and the ledger, handed the same effect keys by both runs, keep
// one charge per payment, and the ledger one notification and one receipt.
// With the keys taken away (CHAOS_NO_EFFECT_KEYS) each retry repeats every
// effect: two charges at the provider, two rows of each kind.
func TestRetryAfterTheChargeChargesOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		noKeys bool
		want   int64 // effects per payment
	}{
		{"with effect keys", false, 1},
		{"without effect keys", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := listen(t)
			fault := &failFirstRun{ran: map[string]bool{}}
			d := faults.WrapRoutes(payments.Domain(), fault.middleware)
			d = faults.Wrap(d, faults.Config{NoEffectKeys: tc.noKeys})
			s := apptest.Start(t, d, "PAYMENT_PROVIDER_URL="+p.URL())
			ids := send(t, s, 10, 1)
			// Every run retried and done (three handlers per payment), so
			// the ledger holds whatever the retries appended.
			testenv.WaitFor(t, 20*time.Second, "every retry done", func() bool { return fault.retried.Load() == 3*10 })
			n := 10 * tc.want
			waitForLedger(t, s, handlers.Summary{Payments: 10, Charges: n, Notifications: n, Receipts: n})
			assertCharges(t, p, ids, tc.want)
		})
	}
}

// Without PAYMENT_PROVIDER_URL the domain charges a provider of its own,
// in process; a URL that is not one fails the domain's Open.
func TestProviderURLSetting(t *testing.T) {
	t.Parallel()
	d := payments.Domain()
	parts, err := d.Open(t.Context(), domain.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if parts.Close == nil {
		t.Fatal("the in-process provider has no Close")
	}
	if err := parts.Close(); err != nil {
		t.Errorf("closing the in-process provider: %v", err)
	}
	for _, bad := range []string{"provider:8080", "ftp://provider", "http://", "http://%zz", "ftp://user:s3cret@provider"} {
		_, err := d.Open(t.Context(), domain.Deps{Environ: []string{"PAYMENT_PROVIDER_URL=" + bad}})
		if err == nil || !strings.Contains(err.Error(), "PAYMENT_PROVIDER_URL") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("PAYMENT_PROVIDER_URL=%s: err = %v, want one naming the setting, without its password", bad, err)
		}
	}
}

// A charge the provider refuses for good goes to poison, as a malformed
// message does; a provider that does not answer is retried.
func TestPermanent(t *testing.T) {
	t.Parallel()
	permanent := payments.Domain().Permanent
	if err := fmt.Errorf("charging payment: %w", provider.ErrRefused); !permanent(err) {
		t.Errorf("%v: not permanent", err)
	}
	if err := fmt.Errorf("decoding: %w", handlers.ErrMalformed); !permanent(err) {
		t.Errorf("%v: not permanent", err)
	}
	if err := errors.New("the provider answered 503 Service Unavailable"); permanent(err) {
		t.Errorf("%v: permanent", err)
	}
}

// listen starts a provider on a loopback port, stopped when t ends.
func listen(t *testing.T) *provider.Server {
	t.Helper()
	p, err := provider.Listen(t.Context(), "127.0.0.1:0", provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// send posts n new payments to the service, each copies times with keys
// of its own, and returns their ids.
func send(t *testing.T, s *apptest.Service, n, copies int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "pay-" + uuid.NewString()
		body := fmt.Sprintf(`{"payment_id":%q,"customer_id":"cus-1","amount_cents":1250,"currency":"EUR"}`, ids[i])
		for range copies {
			req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/payments", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", uuid.NewString())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("POST /v1/payments: %s", resp.Status)
			}
		}
	}
	return ids
}

// waitForLedger waits until the ledger's summary is want.
func waitForLedger(t *testing.T, s *apptest.Service, want handlers.Summary) {
	t.Helper()
	var got handlers.Summary
	testenv.WaitFor(t, 20*time.Second, fmt.Sprintf("the ledger to hold %+v", want), func() bool {
		return s.Get(t, "/v1/ledger/summary", &got) == http.StatusOK && got == want
	})
}

// assertCharges requires the provider to have made want charges of each
// payment (the anonymous client's: the payment id is its key).
func assertCharges(t *testing.T, p *provider.Server, ids []string, want int64) {
	t.Helper()
	for _, id := range ids {
		if got, err := p.Count(t.Context(), id); err != nil || got != want {
			t.Errorf("the provider made %d charges of %s (%v), want %d", got, id, err, want)
		}
	}
	if got, err := p.Count(t.Context(), ""); err != nil || got != want*int64(len(ids)) {
		t.Errorf("the provider made %d charges (%v), want %d", got, err, want*int64(len(ids)))
	}
}

// failFirstRun fails the first run of each message in each handler after
// the handler succeeded, its side effects done: as a crash between an
// effect and its record would, in lease mode.
type failFirstRun struct {
	mu  sync.Mutex
	ran map[string]bool
	// retried counts the runs after the first that succeeded.
	retried atomic.Int64
}

func (f *failFirstRun) middleware(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		out, err := h(msg)
		if err != nil {
			return nil, err
		}
		k := message.HandlerNameFromCtx(msg.Context()) + " " + msg.Metadata.Get(consume.MetadataKey)
		f.mu.Lock()
		first := !f.ran[k]
		f.ran[k] = true
		f.mu.Unlock()
		if first {
			return nil, errors.New("failing after the effect")
		}
		f.retried.Add(1)
		return out, nil
	}
}
