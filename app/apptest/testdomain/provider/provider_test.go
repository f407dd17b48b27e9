package provider_test

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/onceflow/onceflow/app/apptest/testdomain/provider"
	"github.com/onceflow/onceflow/internal/testenv"
)

// backends runs test on a provider in memory, and on one in PostgreSQL in
// a schema of its own.
func backends(t *testing.T, test func(t *testing.T, p *provider.Provider)) {
	t.Helper()
	for name, cfg := range map[string]func(*testing.T) provider.Config{
		"memory":   func(*testing.T) provider.Config { return provider.Config{} },
		"postgres": func(t *testing.T) provider.Config { return provider.Config{DB: testenv.Postgres(t)} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := provider.Start(t.Context(), cfg(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := p.Close(); err != nil {
					t.Errorf("closing the provider: %v", err)
				}
			})
			test(t, p)
		})
	}
}

// withKey is a client whose requests carry the Idempotency-Key key.
func withKey(key string) *http.Client {
	return &http.Client{Transport: keyTransport(key)}
}

type keyTransport string

func (k keyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Idempotency-Key", string(k))
	return http.DefaultTransport.RoundTrip(req)
}

func assertCounts(t *testing.T, p *provider.Provider, want provider.Counts) {
	t.Helper()
	if got, err := p.Counts(t.Context()); err != nil || got != want {
		t.Errorf("Counts() = %+v, %v; want %+v", got, err, want)
	}
}

// One Idempotency-Key charges once, however often it is sent, even all
// at once: the repeats answer with the first charge (or 409 while it is in
// flight, in memory). Without a key every request charges.
func TestChargesOncePerKey(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, p *provider.Provider) {
		first, err := provider.Charge(t.Context(), withKey("key-1"), p.URL, "a-1", 5)
		if err != nil || !strings.HasPrefix(first, "ch_") {
			t.Fatalf("first charge: %q, %v", first, err)
		}
		if again, err := provider.Charge(t.Context(), withKey("key-1"), p.URL+"/", "a-1", 5); err != nil || again != first {
			t.Errorf("repeat: %q, %v; want the first charge %q", again, err, first)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if id, err := provider.Charge(t.Context(), withKey("key-2"), p.URL, "a-2", 5); err != nil && !strings.Contains(err.Error(), "409") {
					t.Errorf("concurrent request of one key: %q, %v", id, err)
				}
			})
		}
		wg.Wait()
		assertCounts(t, p, provider.Counts{Charges: 2, IDs: 2})

		for range 2 {
			if _, err := provider.Charge(t.Context(), http.DefaultClient, p.URL, "a-3", 5); err != nil {
				t.Fatal(err)
			}
		}
		assertCounts(t, p, provider.Counts{Charges: 4, IDs: 3})
	})
}

// A request that is not a charge, or a key reused for another charge, is
// refused and charges nothing.
func TestRefusesAndChargesNothing(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, p *provider.Provider) {
		if _, err := provider.Charge(t.Context(), withKey("key-1"), p.URL, "a-1", 5); err != nil {
			t.Fatal(err)
		}
		for name, charge := range map[string]func() error{
			"key reused": func() error { _, err := provider.Charge(t.Context(), withKey("key-1"), p.URL, "a-1", 6); return err },
			"no ref":     func() error { _, err := provider.Charge(t.Context(), http.DefaultClient, p.URL, "", 5); return err },
			"no amount":  func() error { _, err := provider.Charge(t.Context(), http.DefaultClient, p.URL, "a-2", 0); return err },
		} {
			if err := charge(); err == nil {
				t.Errorf("%s: charged", name)
			}
		}
		resp, err := http.Post(p.URL+"/charges", "application/json", strings.NewReader(`{"ref":"a-1","amount":5,"tip":1}`))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("an unknown field: %s, want 400", resp.Status)
		}
		assertCounts(t, p, provider.Counts{Charges: 1, IDs: 1})
	})
}

// While Refuse is on every charge is refused for good, with a reason, as
// ErrRefused, and charges nothing; the face's own 422 (a key reused for
// another charge) is no such refusal. The refusal is not recorded under
// the key: once Refuse is off, the refused key charges, once.
func TestRefuseRefusesForGoodUntilOff(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, p *provider.Provider) {
		if _, err := provider.Charge(t.Context(), withKey("key-1"), p.URL, "a-1", 5); err != nil {
			t.Fatal(err)
		}
		if _, err := provider.Charge(t.Context(), withKey("key-1"), p.URL, "a-1", 6); err == nil || errors.Is(err, provider.ErrRefused) {
			t.Errorf("a key reused for another charge: %v, want an error other than ErrRefused", err)
		}
		p.Refuse(true)
		for range 2 {
			_, err := provider.Charge(t.Context(), withKey("key-2"), p.URL, "a-2", 5)
			if !errors.Is(err, provider.ErrRefused) || !strings.Contains(err.Error(), "suspended") {
				t.Fatalf("a charge while refusing: %v, want ErrRefused with its reason", err)
			}
		}
		if _, err := provider.Charge(t.Context(), http.DefaultClient, p.URL, "a-3", 5); !errors.Is(err, provider.ErrRefused) {
			t.Errorf("a charge without a key while refusing: %v, want ErrRefused", err)
		}
		assertCounts(t, p, provider.Counts{Charges: 1, IDs: 1})

		p.Refuse(false)
		first, err := provider.Charge(t.Context(), withKey("key-2"), p.URL, "a-2", 5)
		if err != nil {
			t.Fatalf("the refused key once Refuse is off: %v", err)
		}
		if again, err := provider.Charge(t.Context(), withKey("key-2"), p.URL, "a-2", 5); err != nil || again != first {
			t.Errorf("its repeat: %q, %v; want the first charge %q", again, err, first)
		}
		assertCounts(t, p, provider.Counts{Charges: 2, IDs: 2})
	})
}
