package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// outageHold is how long every outage lasts.
const outageHold = 10 * time.Second

// redisArgs are the settings of a row's own Redis: with an append-only
// file (appendonly yes, appendfsync everysec) when durable, else without
// any persistence (save "", appendonly no), as docker-compose.yml once
// shipped it.
func redisArgs(durable bool) []string {
	args := []string{"--save", "", "--maxmemory-policy", "noeviction"}
	if durable {
		return append(args, "--appendonly", "yes", "--appendfsync", "everysec")
	}
	return append(args, "--appendonly", "no")
}

// Scenario 2, store outage, on RabbitMQ in lease mode with a Redis of the
// row's own (the ledger stays on the shared PostgreSQL): Redis restarted
// with its append-only file, Redis unresponsive (CLIENT PAUSE), both
// fail-closed and fail-open, and a Redis without persistence restarted;
// the rows whose way to a double is open without effect keys (fail-open,
// a Redis that forgets) also run without them.
func storeOutage(t *testing.T, svc Services, sc scale) {
	const transport = "amqp"
	for _, c := range []struct {
		name    string
		durable bool
		pause   bool
		policy  string
		noKeys  bool
	}{
		{"redis-restart-fail-closed", true, false, "fail-closed", false},
		{"redis-pause-fail-closed", true, true, "fail-closed", false},
		{"redis-restart-fail-open", true, false, "fail-open", false},
		{"redis-restart-fail-open-no-effect-keys", true, false, "fail-open", true},
		{"redis-no-persistence-restart", false, false, "fail-closed", false},
		{"redis-no-persistence-restart-no-effect-keys", false, false, "fail-closed", true},
	} {
		if !sc.full && !shortRow("store_outage", transport, c.name) {
			continue
		}
		t.Run(transport+"/"+c.name, func(t *testing.T) {
			needBroker(t, transport)
			sc.parallel(t)
			redis := testenv.RedisServer(t, redisArgs(c.durable)...)
			own := svc
			own.RedisURL = "redis://" + redis.Addr() + "/0"
			setup := Setup{Transport: transport, Store: "redis", Mode: "lease", NoEffectKeys: c.noKeys, Env: []string{"DEDUP_ON_STORE_ERROR=" + c.policy}}
			row := NewRow(t, own, setup)
			ids := row.IDs(sc.requests)
			down, up, fault := func() error { redis.Shutdown(); return nil }, redis.Restart, "Redis (append-only file) restarted, 10 s down"
			if c.pause {
				pause := func() error {
					return redis.Client(t).Do(t.Context(), "CLIENT", "PAUSE", outageHold.Milliseconds(), "ALL").Err()
				}
				down, up, fault = pause, func() error { return nil }, "Redis unresponsive 10 s (CLIENT PAUSE)"
			} else if !c.durable {
				fault = "Redis without persistence restarted, 10 s down"
			}
			o, err := row.RunOutage(ids, copies, outageHold, down, up)
			f, err := row.Settle(len(ids), err, sc.bound)
			res := Result{Run: t.Name(), Scenario: "store outage", Transport: transport, Mode: setup.modeLabel() + ", " + c.policy,
				Fault: fault, Sent: o.Sent, Unique: len(ids), Figures: f, Recovery: o.Resumed, PeakRSS: row.PeakRSS()}
			res.Verdict = verdict(t, setup, len(ids), f, err)
			var problems []string
			switch {
			case !c.durable:
				res.Risk = riskForgetfulStore
			case c.policy == "fail-open":
				res.Risk = riskFailOpen
			default:
				// Lease mode cannot record an effect whose store is gone:
				// a handler that charged just before the outage leaves its
				// claim in progress, and a copy after the lease may charge
				// again. Counted; transaction mode has no such window.
				res.Risk = riskStoreBetween
			}
			if c.durable && c.policy == "fail-closed" {
				if o.Resumed > 5*time.Second {
					problems = append(problems, fmt.Sprintf("charging resumed %v after Redis returned, want within 5s", o.Resumed))
				}
			}
			problems = append(problems, o.readinessProblems()...)
			fail(t, &res, problems)
			t.Logf("%s: sent %d, %+v, doubles %d, resumed %v after the store returned", t.Name(), o.Sent, f, f.Doubles(), o.Resumed)
			record(res)
		})
	}
}
