package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// pgRestartFault names the fault of every PostgreSQL-restart row.
const pgRestartFault = "PostgreSQL restarted, 10 s down (own instance; ledger on it)"

// TestChaosPostgresRestart runs the PostgreSQL rows of scenarios 2 and 3
// on a PostgreSQL of each row's own, which holds the record store, the
// ledger and, under the sql transport, the broker too; it is shut down
// (fast shutdown) for 10 s and started again on the same data.
//
// Store outage: RabbitMQ, the postgres store fail-closed, in lease and in
// transaction mode: 0 missing, charging resumes within 5 s of PostgreSQL
// returning. Broker outage: the sql transport in both modes: 0 missing,
// the instances reconnect without a restart. Transaction mode requires 0
// doubles. Lease mode counts them: the server stopping between a charge
// and its record (one statement each) leaves the claim in progress, and a
// copy after the lease charges again — the row names that risk. Every row
// requires /readyz to answer 503 during the outage and 200 after it. The
// short variant runs the store-outage transaction row.
func TestChaosPostgresRestart(t *testing.T) {
	svc := setUp(t)
	sc := chaosScale()
	for _, c := range []struct {
		scenario, transport, mode string
		short                     bool
	}{
		{"store outage", "amqp", "lease", false},
		{"store outage", "amqp", "transaction", true},
		{"broker outage", "sql", "lease", false},
		{"broker outage", "sql", "transaction", false},
	} {
		if !sc.full && !c.short {
			continue
		}
		name := map[string]string{"store outage": "store_outage", "broker outage": "broker_outage"}[c.scenario]
		t.Run(name+"/"+c.transport+"/"+c.mode+"-postgres-restart", func(t *testing.T) {
			needBroker(t, c.transport)
			sc.parallel(t)
			pgRestart(t, svc, sc, c.scenario, Setup{Transport: c.transport, Store: "postgres", Mode: c.mode})
		})
	}
}

// pgRestart runs one row of setup against a PostgreSQL of its own that is
// restarted once a tenth of the requests are charged.
func pgRestart(t *testing.T, svc Services, sc scale, scenario string, setup Setup) {
	pg := testenv.PostgresServer(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of PostgreSQL's log:\n%s", tail(pg.LogPath(), 25))
		}
	})
	// The row's DATABASE_URL (store, ledger, sql broker) is the server's:
	// the later setting wins in the instances' environment.
	setup.Env = append(setup.Env, "DATABASE_URL="+pg.URL())
	if scenario == "store outage" {
		setup.Env = append(setup.Env, "DEDUP_ON_STORE_ERROR=fail-closed")
	}
	row := NewRow(t, svc, setup)
	row.DatabaseURL = pg.URL()
	ids := row.IDs(sc.requests)

	// The ledger is on the restarted server, so it cannot be read during
	// the outage: the charges to beat are read as soon as it is back.
	resumed := make(chan time.Duration, 1)
	up := func() error {
		if err := pg.Start(); err != nil {
			return err
		}
		back := time.Now()
		before, err := row.Ledger()
		if err != nil {
			return err
		}
		go func() { resumed <- chargesResume(row, before, len(ids), back) }()
		return nil
	}
	o, err := row.RunOutage(ids, copies, outageHold, pg.Stop, up)
	if err == nil {
		o.Resumed = <-resumed
	}
	f, err := row.Settle(len(ids), err, sc.bound)
	mode := setup.modeLabel()
	if scenario == "store outage" {
		mode += ", fail-closed"
	}
	res := Result{Run: t.Name(), Scenario: scenario, Transport: setup.Transport, Mode: mode,
		Fault: pgRestartFault, Sent: o.Sent, Unique: len(ids), Figures: f, Recovery: o.Resumed, PeakRSS: row.PeakRSS()}
	res.Verdict = verdict(t, setup, len(ids), f, err)
	var problems []string
	if setup.Mode == "lease" {
		res.Risk = riskStoreBetween
	} else if f.Doubles() != 0 {
		problems = append(problems, fmt.Sprintf("%d doubles, want 0", f.Doubles()))
	}
	if scenario == "store outage" && o.Resumed > 5*time.Second {
		problems = append(problems, fmt.Sprintf("charging resumed %v after PostgreSQL returned, want within 5s", o.Resumed))
	}
	if o.ReadyDuring {
		problems = append(problems, "/readyz answered 200 during the outage")
	}
	if !o.ReadyAfter {
		problems = append(problems, "/readyz not 200 within 30s after the outage")
	}
	for _, i := range row.Instances {
		select {
		case <-i.exitedChan():
			problems = append(problems, i.Name+" exited instead of reconnecting")
		default:
		}
	}
	fail(t, &res, problems)
	t.Logf("%s: sent %d, %+v, doubles %d, resumed %v after PostgreSQL returned", t.Name(), o.Sent, f, f.Doubles(), o.Resumed)
	record(res)
}

// chargesResume waits, at most a minute, until the row's charges exceed
// before's and returns how long that took since back; 0 when every
// request was already charged.
func chargesResume(row *Row, before Figures, unique int, back time.Time) time.Duration {
	if before.Charges.IDs >= int64(unique) {
		return 0
	}
	for time.Since(back) < time.Minute {
		if f, err := row.Ledger(); err == nil && f.Charges.Rows > before.Charges.Rows {
			return time.Since(back)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(back)
}
