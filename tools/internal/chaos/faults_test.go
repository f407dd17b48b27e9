package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Scenario 4, handler faults, on the sql transport: the handlers fail with
// probability 0.3 before, or after, their effects (the charge at the
// provider, the ledger row). Failing before is
// harmless in both modes; failing after is rolled back in transaction mode
// and doubles in lease mode (counted, not failed).
func handlerFaults(t *testing.T, svc Services, sc scale) {
	const transport = "sql"
	t.Run(transport, func(t *testing.T) {
		needBroker(t, transport)
		sc.parallel(t)
		for _, c := range []struct {
			name, env   string
			store, mode string
			noKeys      bool
		}{
			{"fail-before-tx", "CHAOS_FAIL_BEFORE=0.3", "postgres", "transaction", false},
			{"fail-before-lease", "CHAOS_FAIL_BEFORE=0.3", "redis", "lease", false},
			{"fail-after-tx", "CHAOS_FAIL_AFTER=0.3", "postgres", "transaction", false},
			{"fail-after-lease", "CHAOS_FAIL_AFTER=0.3", "redis", "lease", false},
			{"fail-after-lease-no-effect-keys", "CHAOS_FAIL_AFTER=0.3", "redis", "lease", true},
		} {
			if !sc.full && !shortRow("handler_faults", transport, c.name) {
				continue
			}
			t.Run(c.name, func(t *testing.T) {
				sc.parallel(t)
				setup := Setup{Transport: transport, Store: c.store, Mode: c.mode, Env: []string{c.env}, NoEffectKeys: c.noKeys}
				row := NewRow(t, svc, setup)
				row.Start(2)
				ids := row.IDs(sc.faultRequests)
				sent, err := row.Publish(context.Background(), ids, copies)
				if err != nil {
					t.Fatal(err)
				}
				f, _, err := row.WaitFinished(len(ids), 6*time.Second, sc.bound)
				res := Result{Run: t.Name(), Scenario: "handler faults", Transport: transport, Mode: setup.modeLabel(),
					Fault: c.env, Sent: sent, Unique: len(ids), Figures: f, PeakRSS: row.PeakRSS()}
				res.Verdict = verdict(t, setup, len(ids), f, err)
				if c.mode == "lease" && c.env == "CHAOS_FAIL_AFTER=0.3" {
					res.Risk = riskFailAfterEffect
				}
				if res.Verdict == "ok" && c.env == "CHAOS_FAIL_BEFORE=0.3" && f.Doubles() != 0 {
					t.Errorf("%d doubles with failures before the write, want 0", f.Doubles())
					res.Verdict = fmt.Sprintf("failed: %d doubles", f.Doubles())
				}
				t.Logf("%s: sent %d, %+v, doubles %d", t.Name(), sent, f, f.Doubles())
				record(res)
			})
		}
	})
}

// Scenario 6, graceful shutdown under load: SIGTERM to one of two
// instances mid-run, then restarted. Nothing in flight may be lost or
// doubled, and the process must exit within SHUTDOWN_TIMEOUT.
func gracefulShutdown(t *testing.T, svc Services, sc scale) {
	const shutdownTimeout = 10 * time.Second // RowDefaults' SHUTDOWN_TIMEOUT
	const name = "lease-redis"
	for _, transport := range brokersAmong("kafka", "amqp", "sql") {
		if !sc.full && !shortRow("graceful_shutdown", transport, name) {
			continue
		}
		t.Run(transport, func(t *testing.T) {
			sc.parallel(t)
			t.Run(name, func(t *testing.T) {
				sc.parallel(t)
				setup := Setup{Transport: transport, Store: "redis", Mode: "lease"}
				row := NewRow(t, svc, setup)
				row.Start(2)
				ids := row.IDs(sc.requests)
				published := make(chan error, 1)
				var sent int
				go func() {
					var err error
					sent, err = row.Publish(context.Background(), ids, copies)
					published <- err
				}()
				// Mid-run: once some requests are charged and while more arrive.
				deadline := time.Now().Add(sc.bound)
				for f, _ := row.Ledger(); f.Charges.IDs < int64(len(ids)/10) && time.Now().Before(deadline); f, _ = row.Ledger() {
					time.Sleep(50 * time.Millisecond)
				}
				took, err := row.Instances[1].Term(shutdownTimeout + 5*time.Second)
				if err != nil {
					t.Error(err)
				}
				if took > shutdownTimeout {
					t.Errorf("exited %v after SIGTERM, want within SHUTDOWN_TIMEOUT=%v", took, shutdownTimeout)
				}
				if err := row.Instances[1].Start(time.Minute); err != nil {
					t.Fatal(err)
				}
				if err := <-published; err != nil {
					t.Fatal(err)
				}
				f, _, err := row.WaitFinished(len(ids), 6*time.Second, sc.bound)
				res := Result{Run: t.Name(), Scenario: "graceful shutdown", Transport: transport, Mode: setup.modeLabel(),
					Fault: "SIGTERM, restart", Sent: sent, Unique: len(ids), Figures: f, Recovery: took, PeakRSS: row.PeakRSS()}
				res.Verdict = verdict(t, setup, len(ids), f, err)
				if res.Verdict == "ok" && f.Doubles() != 0 {
					t.Errorf("%d doubles after a graceful shutdown, want 0", f.Doubles())
					res.Verdict = fmt.Sprintf("failed: %d doubles", f.Doubles())
				}
				t.Logf("%s: sent %d, %+v, doubles %d, exit after SIGTERM %v", t.Name(), sent, f, f.Doubles(), took)
				record(res)
			})
		})
	}
}
