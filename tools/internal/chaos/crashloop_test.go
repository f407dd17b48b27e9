package chaos

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// Scenario 1, crash loop, on every broker of the picker: two instances
// share the work while one of them is killed with SIGKILL at random
// moments and restarted at once; on mixedTransport also a service whose
// routes mix lease and transaction mode. The requests are published in kills+1
// batches, one before each kill, so that every kill hits work in flight.
func TestChaos(t *testing.T) {
	svc := setUp(t)
	sc := chaosScale()
	t.Run("crash_loop", func(t *testing.T) {
		sc.parallel(t)
		for _, transport := range brokers() {
			t.Run(transport, func(t *testing.T) {
				sc.parallel(t)
				for _, m := range modes {
					if !sc.full && !shortRow("crash_loop", transport, m.name) {
						continue
					}
					t.Run(m.name, func(t *testing.T) {
						sc.parallel(t)
						crashLoop(t, svc, sc, Setup{Transport: transport, Store: m.store, Mode: m.mode})
					})
				}
				for _, noKeys := range []bool{false, true} {
					name := "mixed-postgres"
					if noKeys {
						name += "-no-effect-keys"
					}
					if transport != mixedTransport || !sc.full && !shortRow("crash_loop", transport, name) {
						continue
					}
					t.Run(name, func(t *testing.T) {
						sc.parallel(t)
						crashLoop(t, svc, sc, Setup{Transport: transport, Store: "postgres", Mode: "lease", Mixed: true, NoEffectKeys: noKeys})
					})
				}
				if transport == noKeysTransport && (sc.full || shortRow("crash_loop", transport, "lease-redis-no-effect-keys")) {
					t.Run("lease-redis-no-effect-keys", func(t *testing.T) {
						sc.parallel(t)
						crashLoop(t, svc, sc, Setup{Transport: transport, Store: "redis", Mode: "lease", NoEffectKeys: true})
					})
				}
			})
		}
	})
	t.Run("handler_faults", func(t *testing.T) { sc.parallel(t); handlerFaults(t, svc, sc) })
	t.Run("graceful_shutdown", func(t *testing.T) { sc.parallel(t); gracefulShutdown(t, svc, sc) })
	t.Run("store_outage", func(t *testing.T) { sc.parallel(t); storeOutage(t, svc, sc) })
	t.Run("broker_outage", func(t *testing.T) { sc.parallel(t); brokerOutage(t, svc, sc) })
	t.Run("network", func(t *testing.T) { sc.parallel(t); networkFaults(t, svc, sc) })
	t.Run("redis_failover", func(t *testing.T) { sc.parallel(t); redisFailover(t, svc, sc) })
}

// shortRows are the rows the short variant (make test) runs: one per
// scenario family, on the transports that start fastest, all in parallel
// (each row has its own namespace, Redis or proxy).
var shortRows = map[string]bool{
	"crash_loop/amqp/lease-redis":                   true,
	"crash_loop/amqp/mixed-postgres-no-effect-keys": true,
	"crash_loop/sql/transaction-postgres":           true,
	"crash_loop/nats/lease-redis":                   true,
	"crash_loop/redisstream/lease-postgres":         true,
	"handler_faults/sql/fail-after-tx":              true,
	"graceful_shutdown/amqp/lease-redis":            true,
	"store_outage/amqp/redis-restart-fail-closed":   true,
	"broker_outage/amqp/lease-redis":                true,
	"broker_outage/nats/lease-redis":                true,
	"broker_outage/redisstream/lease-redis":         true,
	"network/amqp/partition/lease-redis":            true,
	// Poison and redrive: every broker, one mode each.
	"poison_redrive/kafka/lease-redis":                true,
	"poison_redrive/amqp/transaction-postgres":        true,
	"poison_redrive/sql/transaction-postgres":         true,
	"poison_redrive/nats/lease-redis":                 true,
	"poison_redrive/redisstream/transaction-postgres": true,
}

func shortRow(parts ...string) bool {
	key := parts[0]
	for _, p := range parts[1:] {
		key += "/" + p
	}
	return shortRows[key]
}

func crashLoop(t *testing.T, svc Services, sc scale, setup Setup) {
	row := NewRow(t, svc, setup)
	row.Start(2)
	ids := row.IDs(sc.requests)
	victim := row.Instances[1]
	batches := sc.kills + 1
	sent := 0
	var lastRestart time.Time
	for b := range batches {
		batch := ids[b*len(ids)/batches : (b+1)*len(ids)/batches]
		published := make(chan error, 1)
		go func() {
			n, err := row.Publish(context.Background(), batch, copies)
			sent += n
			published <- err
		}()
		if b == batches-1 {
			if err := <-published; err != nil {
				t.Fatal(err)
			}
			break
		}
		time.Sleep(time.Duration(300+rand.IntN(1200)) * time.Millisecond)
		if err := victim.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := victim.Start(time.Minute); err != nil {
			t.Fatal(err)
		}
		lastRestart = time.Now()
		if err := <-published; err != nil {
			t.Fatal(err)
		}
	}
	f, done, err := row.WaitFinished(len(ids), 6*time.Second, sc.bound)
	res := Result{Run: t.Name(), Scenario: "crash loop", Transport: setup.Transport, Mode: setup.modeLabel(),
		Fault: itoa(sc.kills) + " x SIGKILL", Sent: sent, Unique: len(ids), Figures: f, PeakRSS: row.PeakRSS()}
	if !done.IsZero() && !lastRestart.IsZero() {
		res.Recovery = max(0, done.Sub(lastRestart))
	}
	res.Verdict = verdict(t, setup, len(ids), f, err)
	if setup.Mode == "lease" {
		res.Risk = riskCrashWindow
	}
	t.Logf("%s: sent %d, %+v, doubles %d, recovery %v, peak RSS %d MiB", t.Name(), sent, f, f.Doubles(), res.Recovery, res.PeakRSS>>20)
	record(res)
}
