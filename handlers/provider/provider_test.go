package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/onceflow/onceflow/handlers/provider"
	"github.com/onceflow/onceflow/internal/testenv"
)

// backends runs test against a provider on each of its backends: memory,
// and PostgreSQL in a schema of its own (an integration test).
func backends(t *testing.T, test func(t *testing.T, s *provider.Server)) {
	t.Helper()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		test(t, listen(t, provider.Config{}))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, listen(t, provider.Config{DB: testenv.Postgres(t)}))
	})
}

// listen starts a provider on a loopback port, stopped when t ends.
func listen(t *testing.T, cfg provider.Config) *provider.Server {
	t.Helper()
	s, err := provider.Listen(t.Context(), "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the provider: %v", err)
		}
	})
	return s
}

const chargeBody = `{"payment_id":"pay-1","customer_id":"cus-1","amount_cents":1250,"currency":"EUR"}`

// post sends body to POST /charges with the Idempotency-Key key ("" for
// none) and returns the status, the charge of a 201 and whether it was
// replayed.
func post(t *testing.T, s *provider.Server, key, body string) (int, provider.Charge, bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/charges", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var c provider.Charge
	if resp.StatusCode == http.StatusCreated {
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("201 with %s: %v", b, err)
		}
	}
	return resp.StatusCode, c, resp.Header.Get("Idempotent-Replayed") == "true"
}

// assertCount requires the provider to have made want charges of
// paymentID ("" for all of them), as GET /charges/count tells.
func assertCount(t *testing.T, s *provider.Server, paymentID string, want int64) {
	t.Helper()
	got, err := provider.NewClient(s.URL(), nil).Count(t.Context(), paymentID)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("the provider made %d charges of %q, want %d", got, paymentID, want)
	}
}

// The same Idempotency-Key charges once: the repeat is answered with the
// first charge, byte for byte, marked as replayed.
func TestSameKeyChargesOnce(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, s *provider.Server) {
		status, first, replayed := post(t, s, "key-1", chargeBody)
		if status != http.StatusCreated || replayed {
			t.Fatalf("first request: %d, replayed %v; want 201, not replayed", status, replayed)
		}
		if !strings.HasPrefix(first.ID, "ch_") || first.PaymentID != "pay-1" || first.AmountCents != 1250 || first.CreatedAt.IsZero() {
			t.Errorf("charge %+v", first)
		}
		status, again, replayed := post(t, s, "key-1", chargeBody)
		if status != http.StatusCreated || !replayed {
			t.Fatalf("repeat: %d, replayed %v; want 201, replayed", status, replayed)
		}
		if again != first {
			t.Errorf("repeat answered %+v, want the first charge %+v", again, first)
		}
		assertCount(t, s, "", 1)
	})
}

// A key reused with another charge is refused (the face's fingerprint):
// 422, nothing charged, and the client reports it as refused for good.
func TestKeyReusedWithAnotherChargeIsRefused(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, s *provider.Server) {
		if status, _, _ := post(t, s, "key-1", chargeBody); status != http.StatusCreated {
			t.Fatalf("first request: %d, want 201", status)
		}
		other := strings.Replace(chargeBody, "1250", "9999", 1)
		if status, _, _ := post(t, s, "key-1", other); status != http.StatusUnprocessableEntity {
			t.Errorf("same key, another amount: %d, want 422", status)
		}
		c := provider.NewClient(s.URL(), &http.Client{Transport: withKey{"key-1"}})
		_, err := c.Charge(t.Context(), provider.ChargeRequest{PaymentID: "pay-1", CustomerID: "cus-1", AmountCents: 1, Currency: "EUR"})
		if !errors.Is(err, provider.ErrRefused) || !strings.Contains(err.Error(), "422") {
			t.Errorf("client: err = %v, want ErrRefused with 422", err)
		}
		assertCount(t, s, "", 1)
	})
}

// Without a key the provider charges every request, as a provider that
// takes the key as optional does: the window an effect key closes.
func TestWithoutKeyEveryRequestCharges(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, s *provider.Server) {
		_, first, _ := post(t, s, "", chargeBody)
		status, second, replayed := post(t, s, "", chargeBody)
		if status != http.StatusCreated || replayed || second.ID == first.ID {
			t.Errorf("second request without a key: %d, replayed %v, id %q after %q; want a new charge", status, replayed, second.ID, first.ID)
		}
		assertCount(t, s, "", 2)
		assertCount(t, s, "pay-1", 2)
		assertCount(t, s, "pay-2", 0)
	})
}

// Requests of one key that arrive together charge once: the others wait
// and are replayed (PostgreSQL) or are told to retry with 409 (memory).
func TestConcurrentRequestsOfOneKeyChargeOnce(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, s *provider.Server) {
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			ids = map[string]bool{}
		)
		for range 8 {
			wg.Go(func() {
				status, c, _ := post(t, s, "key-1", chargeBody)
				mu.Lock()
				defer mu.Unlock()
				switch status {
				case http.StatusCreated:
					ids[c.ID] = true
				case http.StatusConflict:
				default:
					t.Errorf("status %d, want 201 or 409", status)
				}
			})
		}
		wg.Wait()
		if len(ids) != 1 {
			t.Errorf("answered with %d charge ids, want 1", len(ids))
		}
		assertCount(t, s, "", 1)
	})
}

func TestInvalidChargeIsRefused(t *testing.T) {
	t.Parallel()
	s := listen(t, provider.Config{})
	for name, body := range map[string]string{
		"no amount":      `{"payment_id":"pay-1","customer_id":"cus-1","currency":"EUR"}`,
		"bad currency":   `{"payment_id":"pay-1","customer_id":"cus-1","amount_cents":1,"currency":"eur"}`,
		"unknown field":  `{"payment_id":"pay-1","customer_id":"cus-1","amount_cents":1,"currency":"EUR","tip":1}`,
		"two objects":    chargeBody + chargeBody,
		"not an object":  `[]`,
		"no payment id":  `{"customer_id":"cus-1","amount_cents":1,"currency":"EUR"}`,
		"no customer id": `{"payment_id":"pay-1","amount_cents":1,"currency":"EUR"}`,
	} {
		if status, _, _ := post(t, s, "", body); status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, status)
		}
	}
	_, err := provider.NewClient(s.URL(), nil).Charge(t.Context(), provider.ChargeRequest{PaymentID: "pay-1"})
	if !errors.Is(err, provider.ErrRefused) {
		t.Errorf("client: err = %v, want ErrRefused", err)
	}
	assertCount(t, s, "", 0)
}

// The client reports a replay, and a failure a retry may fix is not
// ErrRefused.
func TestClient(t *testing.T) {
	t.Parallel()
	s := listen(t, provider.Config{})
	c := provider.NewClient(s.URL()+"/", &http.Client{Transport: withKey{"key-1"}})
	req := provider.ChargeRequest{PaymentID: "pay-1", CustomerID: "cus-1", AmountCents: 1250, Currency: "EUR"}
	first, err := c.Charge(t.Context(), req)
	if err != nil || first.Replayed {
		t.Fatalf("first charge: %+v, %v", first, err)
	}
	again, err := c.Charge(t.Context(), req)
	if err != nil || !again.Replayed || again.ID != first.ID {
		t.Errorf("repeat: %+v, %v; want the first charge, replayed", again, err)
	}

	stopped := listen(t, provider.Config{})
	if err := stopped.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = provider.NewClient(stopped.URL(), nil).Charge(t.Context(), req)
	if err == nil || errors.Is(err, provider.ErrRefused) {
		t.Errorf("a provider that is gone: err = %v, want an error worth a retry", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Charge(ctx, req); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
}

func TestReady(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, s *provider.Server) {
		if status := testenv.GetJSON(t, s.URL()+"/readyz", nil); status != http.StatusOK {
			t.Errorf("/readyz: %d, want 200", status)
		}
	})
}

// withKey is a transport that sends every request with an Idempotency-Key.
type withKey struct{ key string }

func (k withKey) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Idempotency-Key", k.key)
	return http.DefaultTransport.RoundTrip(req)
}
