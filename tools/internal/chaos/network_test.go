package chaos

import (
	"testing"
	"time"
)

// leaseHold is twice the rows' DEDUP_LEASE (RowDefaults): a fault held
// this long outlasts every lease the instance it hits holds.
const leaseHold = 8 * time.Second

// latencyHold is how long the store link is slowed.
const latencyHold = 20 * time.Second

// Scenario 8, faults beyond crashes, on RabbitMQ with each instance
// reaching the record store through a Toxiproxy link of its own: one
// instance cut from its store (a partition: nothing passes, nothing
// closes) or frozen (SIGSTOP) for twice the lease while its handlers run,
// a store link whose answers stop coming back while its requests still
// arrive (half-open), the link to the provider half-open (a charge
// made whose answer is lost), and every store link slowed by 50 ms and by
// 500 ms.
// The lease rows run with the receiver's effect keys and without them:
// the provider's doubles are 0 with the keys, and without them they show
// the window the keys close.
func networkFaults(t *testing.T, svc Services, sc scale) {
	const transport = "amqp"
	type fault struct {
		name, text string
		// hits one instance: the second, whose /readyz must answer 503
		// during the fault.
		one         bool
		hold        time.Duration
		down        func(*Row) (up func() error, err error)
		risk        string
		transaction bool // also in transaction mode, with the PostgreSQL store
		provider    bool // on the link to the provider, not those to the store
	}
	silence := func(directions ...string) func(*Row) (func() error, error) {
		return func(r *Row) (func() error, error) { return r.StoreLink(1).Silence(directions...) }
	}
	latency := func(ms int) func(*Row) (func() error, error) {
		return func(r *Row) (func() error, error) {
			for i := range r.Instances {
				if err := r.StoreLink(i).Add("latency", "latency", Downstream, map[string]any{"latency": ms, "jitter": ms / 5}); err != nil {
					return nil, err
				}
			}
			return func() error {
				for i := range r.Instances {
					if err := r.StoreLink(i).Remove("latency"); err != nil {
						return err
					}
				}
				return nil
			}, nil
		}
	}
	faults := []fault{
		{name: "partition", one: true, hold: leaseHold, down: silence(), risk: riskPartition, transaction: true,
			text: "one instance cut from the record store for 2 x DEDUP_LEASE while its handlers run (Toxiproxy: nothing passes, nothing closes), then healed"},
		{name: "pause", one: true, hold: leaseHold, risk: riskPause, transaction: true,
			text: "one instance frozen (SIGSTOP) for 2 x DEDUP_LEASE, then SIGCONT",
			down: func(r *Row) (func() error, error) {
				v := r.Instances[1]
				return v.Resume, v.Suspend()
			}},
		{name: "half-open", one: true, hold: leaseHold, down: silence(Downstream), risk: riskHalfOpen,
			text: "one instance's store link half-open for 2 x DEDUP_LEASE: requests reach the store, answers never come back, nothing closes"},
		{name: "provider-half-open", hold: leaseHold, risk: riskLostAnswer, provider: true, transaction: true,
			text: "the link to the provider half-open for 2 x DEDUP_LEASE: charges are requested and made, their answers never come back",
			down: func(r *Row) (func() error, error) { return r.ProviderLink.Silence(Downstream) }},
		{name: "latency-50ms", hold: latencyHold, down: latency(50),
			text: "every store link slowed by 50 ms ± 10 ms for 20 s"},
		{name: "latency-500ms", hold: latencyHold, down: latency(500), risk: riskSlowStore,
			text: "every store link slowed by 500 ms ± 100 ms for 20 s"},
	}
	for _, f := range faults {
		setups := []Setup{
			{Transport: transport, Store: "redis", Mode: "lease"},
			{Transport: transport, Store: "redis", Mode: "lease", NoEffectKeys: true},
		}
		if f.transaction {
			setups = append(setups, Setup{Transport: transport, Store: "postgres", Mode: "transaction"})
		}
		for _, setup := range setups {
			setup.StoreLinks, setup.ProviderLink = !f.provider, f.provider
			name := setup.Mode + "-" + setup.Store
			if setup.NoEffectKeys {
				name += "-no-effect-keys"
			}
			if !sc.full && !shortRow("network", transport, f.name, name) {
				continue
			}
			t.Run(transport+"/"+f.name+"/"+name, func(t *testing.T) {
				needBroker(t, transport)
				sc.parallel(t)
				row := NewRow(t, svc, setup)
				if f.one {
					row.Victim = 1
				}
				ids := row.IDs(sc.requests)
				var up func() error
				down := func() (err error) { up, err = f.down(row); return err }
				o, err := row.RunOutage(ids, copies, f.hold, down, func() error { return up() })
				fig, err := row.Settle(len(ids), err, sc.bound)
				res := Result{Run: t.Name(), Scenario: "network and process faults", Transport: transport, Mode: setup.modeLabel(),
					Fault: f.text, Sent: o.Sent, Unique: len(ids), Figures: fig, Recovery: o.Resumed, PeakRSS: row.PeakRSS()}
				res.Verdict = verdict(t, setup, len(ids), fig, err)
				if setup.Mode == "lease" {
					res.Risk = f.risk
				}
				var problems []string
				if f.one {
					// The instance the fault hits cannot reach its store,
					// or cannot answer at all: not ready; ready again after.
					problems = o.readinessProblems()
				} else if !o.ReadyAfter {
					problems = append(problems, "/readyz not 200 within 30s after the fault")
				}
				fail(t, &res, problems)
				t.Logf("%s: sent %d, %+v, doubles %d in the ledger, %d at the provider, resumed %v after the fault",
					t.Name(), o.Sent, fig, fig.Doubles(), fig.ProviderDoubles(), o.Resumed)
				record(res)
			})
		}
	}
}
