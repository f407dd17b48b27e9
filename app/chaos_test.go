package app

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/memory"
	"github.com/onceflow/onceflow/internal/testenv"
)

// A probability of 1 always fails and 0 never does, so the switches can be
// checked against a real ledger without chance.
func TestChaosLedgerSwitches(t *testing.T) {
	ctx := context.Background()
	p := handlers.Payment{ID: "pay-chaos", CustomerID: "c", AmountCents: 5, Currency: "EUR"}
	for _, tc := range []struct {
		name                  string
		before, after         float64
		wantErr               bool
		wantCharges, wantNoti int64
	}{
		{"off", 0, 0, false, 1, 1},
		{"fail before", 1, 0, true, 0, 0},
		{"fail after", 0, 1, true, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			real := memory.NewLedger()
			l := withChaos(real, Config{ChaosFailBefore: tc.before, ChaosFailAfter: tc.after})
			errC := l.AppendCharge(ctx, p, "ch-1")
			errN := l.AppendNotification(ctx, p, "ch-1")
			for _, err := range []error{errC, errN} {
				if got := errors.Is(err, errChaos); got != tc.wantErr {
					t.Errorf("error = %v, want injected: %v", err, tc.wantErr)
				}
			}
			s, err := real.Summary(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if s.Charges != tc.wantCharges || s.Notifications != tc.wantNoti {
				t.Errorf("ledger holds %+v, want %d charges and %d notifications", s, tc.wantCharges, tc.wantNoti)
			}
		})
	}
	if l := withChaos(memory.NewLedger(), Config{}); l == nil {
		t.Fatal("withChaos returned nil")
	} else if _, wrapped := l.(chaosLedger); wrapped {
		t.Error("withChaos wrapped the ledger with every switch off")
	}
}

// CHAOS_DELAY sleeps before the write and gives up with the context.
func TestChaosLedgerDelay(t *testing.T) {
	real := memory.NewLedger()
	l := withChaos(real, Config{ChaosDelay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := l.AppendCharge(ctx, handlers.Payment{ID: "pay-slow", CustomerID: "c", AmountCents: 5, Currency: "EUR"}, "ch-1")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want the context's deadline", err)
	}
	if s, _ := real.Summary(context.Background()); s.Charges != 0 {
		t.Errorf("charges = %d after a cancelled delay, want 0", s.Charges)
	}
}

// With CHAOS_FAIL_AFTER=1 through a whole App every handler attempt fails
// after its write, and the broker (the sql transport) redelivers it. Transaction mode rolls
// each write back: after several failed attempts the ledger holds no
// charge. Lease mode keeps every write: each attempt charges again.
func TestChaosFailAfterThroughTheApp(t *testing.T) {
	testenv.Integration(t)
	testenv.Redis(t)
	const attempts = 2
	charges := func(t *testing.T, environ ...string) int {
		a := startApp(t, append([]string{"TRANSPORT=sql", "SQL_POLL_INTERVAL=10ms", "DATABASE_URL=" + testenv.PostgresSchema(t),
			"CHAOS_FAIL_AFTER=1", "LOG_LEVEL=error"}, environ...)...)
		if code := a.post(t, "/v1/payments", paymentBody(uuid.NewString())); code != http.StatusAccepted {
			t.Fatalf("POST /v1/payments: status %d, want 202", code)
		}
		waitFor(t, "several failed attempts", func() bool {
			return a.metric(t, "onceflow_receiver_outcomes_total", "scope", handlers.ChargePaymentHandler, "outcome", "failed") >= attempts
		})
		return a.summary(t).Charges
	}
	t.Run("transaction", func(t *testing.T) {
		if got := charges(t, "STORE=postgres", "DEDUP_MODE=transaction"); got != 0 {
			t.Errorf("transaction mode: %d charges, want 0 (every failed attempt rolled back)", got)
		}
	})
	t.Run("lease", func(t *testing.T) {
		if got := charges(t, "STORE=redis", "REDIS_URL=redis://"+testenv.RedisAddr()+"/0", "DEDUP_MODE=lease"); got < attempts {
			t.Errorf("lease mode: %d charges, want at least %d (one per failed attempt, kept)", got, attempts)
		}
	})
}
