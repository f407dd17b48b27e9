package testdomain_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/provider"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// The service on the test domain handles each request once in every
// route however often it is sent: in lease mode on the in-process broker
// and memory, and in transaction mode on PostgreSQL, where the ledger is
// the database's. The provider the routes charge charges each once.
func TestServiceHandlesEachRequestOnce(t *testing.T) {
	t.Parallel()
	for name, environ := range map[string]func(*testing.T) []string{
		"gochannel, memory": func(*testing.T) []string { return nil },
		"postgres, transaction": func(t *testing.T) []string {
			return []string{"DATABASE_URL=" + testenv.PostgresSchema(t), "STORE=postgres", "DEDUP_MODE=transaction"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := startProvider(t)
			s := apptest.Start(t, testdomain.Domain(), append(environ(t), testdomain.ProviderSetting+"="+p.URL)...)
			const n, copies = 5, 3
			for i := range n * copies {
				if status := post(t, s, fmt.Sprintf(`{"id":"r-%d","amount":%d}`, i%n, 1+i%n)); status != http.StatusAccepted {
					t.Fatalf("POST: %d", status)
				}
			}
			once := testdomain.Counts{Rows: n, IDs: n}
			waitForTally(t, s, testdomain.Tally{Requests: testdomain.Counts{Rows: n * copies, IDs: n}, Charges: once, Notices: once, Receipts: once})
			if got, err := p.Counts(t.Context()); err != nil || got != (provider.Counts{Charges: n, IDs: n}) {
				t.Errorf("the provider charged %+v, %v; want each of %d once", got, err, n)
			}
			if got := s.Metric(t, "onceflow_poisoned_messages_total"); got != 0 {
				t.Errorf("%v messages poisoned, want none", got)
			}
		})
	}
}

// A run that fails after its effects (a middleware of WithMiddleware) is
// retried and makes them again, under the same effect keys: one charge at
// the provider, one row of each kind. With the keys taken away every
// effect is made twice.
func TestRetryAfterTheEffectsMakesThemOnce(t *testing.T) {
	t.Parallel()
	for name, keys := range map[string]bool{"with effect keys": true, "without effect keys": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var (
				mu  sync.Mutex
				ran = map[string]bool{}
			)
			failFirst := func(h message.HandlerFunc) message.HandlerFunc {
				return func(msg *message.Message) ([]*message.Message, error) {
					if !keys {
						msg.SetContext(receiver.WithoutEffectKeys(msg.Context()))
					}
					out, err := h(msg)
					mu.Lock()
					defer mu.Unlock()
					if run := message.HandlerNameFromCtx(msg.Context()) + " " + msg.UUID; err == nil && !ran[run] {
						ran[run] = true
						return nil, errors.New("failing after the effects")
					}
					return out, err
				}
			}
			p := startProvider(t)
			s := apptest.Start(t, testdomain.Domain(testdomain.WithMiddleware(failFirst)), testdomain.ProviderSetting+"="+p.URL)
			if status := post(t, s, `{"id":"r-1","amount":5}`); status != http.StatusAccepted {
				t.Fatalf("POST: %d", status)
			}
			n := int64(1)
			if !keys {
				n = 2
			}
			twice := testdomain.Counts{Rows: n, IDs: 1}
			waitForTally(t, s, testdomain.Tally{Requests: testdomain.Counts{Rows: 1, IDs: 1}, Charges: twice, Notices: twice, Receipts: twice})
			if got, err := p.Counts(t.Context()); err != nil || got != (provider.Counts{Charges: n, IDs: 1}) {
				t.Errorf("the provider charged %+v, %v; want %d charges", got, err, n)
			}
		})
	}
}

// A charge the provider refuses for good (provider.Refuse) is permanent:
// the request is poisoned and parked at once, as a permanent one and not
// a malformed one, and nothing is charged.
func TestRefusedChargeIsPoisoned(t *testing.T) {
	t.Parallel()
	d := testdomain.Domain()
	refused := fmt.Errorf("charging %q: %w", "r-1", provider.ErrRefused)
	if !errors.Is(refused, testdomain.ErrRefused) || !d.Permanent(refused) || d.Malformed(refused) {
		t.Fatalf("the provider's refusal: ErrRefused %v, permanent %v, malformed %v; want permanent, not malformed",
			errors.Is(refused, testdomain.ErrRefused), d.Permanent(refused), d.Malformed(refused))
	}
	p := startProvider(t)
	p.Refuse(true)
	s := apptest.Start(t, d, testdomain.ProviderSetting+"="+p.URL)
	if status := post(t, s, `{"id":"r-1","amount":5}`); status != http.StatusAccepted {
		t.Fatalf("POST: %d", status)
	}
	testenv.WaitFor(t, 20*time.Second, "the refused request parked", func() bool {
		return s.Metric(t, "onceflow_poison_parked_total", "outcome", "parked") == 1
	})
	if got := s.Metric(t, "onceflow_poisoned_messages_total"); got != 1 {
		t.Errorf("%v messages poisoned, want 1", got)
	}
	if got, err := p.Counts(t.Context()); err != nil || got != (provider.Counts{}) {
		t.Errorf("the provider charged %+v, %v; want nothing", got, err)
	}
}

// `onceflow send` posts its requests, each --copies times, to the service
// its settings name.
func TestSendCommand(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, testdomain.Domain())
	var out bytes.Buffer
	run := func(args ...string) error {
		env := app.CommandEnv(args, []string{"HTTP_ADDR=" + s.Addr()}, &out, &out)
		return testdomain.Domain().Commands["send"].Run(t.Context(), env)
	}
	if err := run("--count", "2", "--copies", "3"); err != nil || !strings.Contains(out.String(), "sent 6 requests: 2 ids") {
		t.Fatalf("send: %v, %q", err, out.String())
	}
	once := testdomain.Counts{Rows: 2, IDs: 2}
	waitForTally(t, s, testdomain.Tally{Requests: testdomain.Counts{Rows: 6, IDs: 2}, Charges: once, Notices: once, Receipts: once})
	for _, args := range [][]string{{"--count", "0"}, {"--copies", "0"}, {"now"}, {"--rate", "1"}} {
		if err := run(args...); err == nil {
			t.Errorf("send %v: no error", args)
		}
	}
}

// The routes pass the checks the service makes; a provider URL that is
// not one fails Open, naming the setting and not its value.
func TestDomain(t *testing.T) {
	t.Parallel()
	d := testdomain.Domain()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	parts, err := d.Open(t.Context(), domain.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := parts.Routes.Validate(); err != nil {
		t.Error(err)
	}
	if got := parts.Routes.Names(); strings.Join(got, " ") != "charge notify receipt" {
		t.Errorf("routes %v", got)
	}
	if got, want := testdomain.Routes().Topics(), parts.Routes.Topics(); !slices.Equal(got, want) ||
		!slices.Equal(testdomain.Routes().Names(), parts.Routes.Names()) {
		t.Errorf("Routes() has topics %v, want Open's %v", got, want)
	}
	if err := parts.Close(); err != nil {
		t.Errorf("closing the in-process provider: %v", err)
	}
	for _, bad := range []string{"provider:8090", "ftp://provider", "http://", "http://u:s3cret@%zz"} {
		_, err := d.Open(t.Context(), domain.Deps{Environ: []string{testdomain.ProviderSetting + "=" + bad}})
		if err == nil || !strings.Contains(err.Error(), testdomain.ProviderSetting) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s=%s: %v, want an error naming the setting without its value", testdomain.ProviderSetting, bad, err)
		}
	}
}

func startProvider(t *testing.T) *provider.Provider {
	t.Helper()
	p, err := provider.Start(t.Context(), provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// post sends body to POST /v1/charges with a fresh Idempotency-Key and
// returns the status.
func post(t *testing.T, s *apptest.Service, body string) int {
	t.Helper()
	resp, _ := do(t, http.MethodPost, s.URL+"/v1/charges", body, "Content-Type", "application/json", "Idempotency-Key", testenv.NewID())
	return resp.StatusCode
}

// waitForTally waits until the service's summary is want.
func waitForTally(t *testing.T, s *apptest.Service, want testdomain.Tally) {
	t.Helper()
	var got testdomain.Tally
	testenv.WaitFor(t, 20*time.Second, fmt.Sprintf("the ledger to hold %+v", want), func() bool {
		return s.Get(t, "/v1/summary", &got) == http.StatusOK && got == want
	})
}
