package main

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/tools/internal/bench"
	"github.com/onceflow/onceflow/tools/internal/bench/flow"
)

// receiverRounds are three rounds of 1000 messages each with the receiver
// off and on, of which the on rounds kept the cores busy as busyOn says.
// Off, each round costs the machine 100µs a message: 40µs of this
// process's transport and 10µs of its runtime, 5µs of redis-server's and
// 30µs of the broker's; on, 1ms: 50µs in the receiver, 200µs in the store
// client, 150µs of transport, 100µs of runtime, 300µs of redis-server's
// and 150µs of the broker's.
func receiverRounds(broker string, busyOn []float64, profiled bool) (offs, ons []flow.RoundTimes) {
	const ms = time.Millisecond
	peers := func(store, brk time.Duration) map[string]time.Duration {
		p := map[string]time.Duration{flow.StoreServer: store}
		if broker != "" {
			p[broker] += brk
		}
		return p
	}
	for i, rate := range []float64{10000, 8000, 12000} {
		offs = append(offs, flow.RoundTimes{Rate: rate, Busy: []float64{0.5, 0.6, 0.4}[i], Delivered: 1000, CPU: bench.CPUUse{
			Machine: 100 * ms, Self: bench.CPUSplit{Transport: 40 * ms, Runtime: 10 * ms}, Profiled: profiled, Peers: peers(5*ms, 30*ms)}})
	}
	for i, rate := range []float64{2000, 3000, 2500} {
		ons = append(ons, flow.RoundTimes{Rate: rate, Busy: busyOn[i], Delivered: 1000, CPU: bench.CPUUse{
			Machine: time.Second, Self: bench.CPUSplit{Receiver: 50 * ms, Store: 200 * ms, Transport: 150 * ms, Runtime: 100 * ms},
			Profiled: profiled, Peers: peers(300*ms, 150*ms)}})
	}
	return offs, ons
}

// The bound of a missed transport target pairs each round's receiver-off
// rate with the same round's receiver-on rate and busy cores, takes the
// median over the rounds, and says where the CPU per message went, off
// and on, summed over the rounds; another transport's rounds play no
// part.
func TestReceiverBoundIsTheCores(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name, kind  string
		busyOn      []float64
		unprofiled  bool
		oneInFlight bool
		want, not   []string
	}{{
		// rate / busy on: 2000, 4000 and 5000 msg/s; over the same
		// round's off: 0.2, 0.5 and 0.417.
		name: "out of reach", kind: "amqp", busyOn: []float64{1, 0.75, 0.5},
		want: []string{"Bound: transport-amqp: the machine spent 100.0µs of CPU per message with the receiver off (10000 msg/s, its cores 50% busy) " +
			"and 1000.0µs with it on (2500 msg/s, 75% busy), medians over 3 rounds; " +
			"with every core busy at the same CPU cost per message the ratio would be at most 0.42 (measured 0.250, goal 0.8).",
			"Per message, summed over the rounds, off → on: this process 50.0µs → 500.0µs (receiver 50.0µs and store client 200.0µs, none off; " +
				"transport 40.0µs → 150.0µs; runtime/GC 10.0µs → 100.0µs); redis-server, the record store, 5.0µs → 300.0µs; " +
				"beam.smp, the broker, 30.0µs → 150.0µs; the rest of the machine (the kernel, other tenants) 15.0µs → 50.0µs.",
			"Verdict: out of reach on this machine: at the receiver's CPU cost per message the cores pass at most 4000 msg/s."},
	}, {
		// 10000, 15000 and 12500 msg/s: 1, 1.875 and 1.04.
		name: "within reach", kind: "amqp", busyOn: []float64{0.2, 0.2, 0.2},
		want: []string{"would be at most 1.04", "Verdict: within reach of the cores, which the receiver-on rounds kept 20% busy."},
	}, {
		// A round without a reading of the cores is left out: 0.5 and
		// 0.417, the upper of the two.
		name: "unread", kind: "amqp", busyOn: []float64{nan, 0.75, 0.5},
		want: []string{"would be at most 0.50", "75% busy", "pass at most 5000 msg/s"},
	}, {
		name: "redisstream", kind: "redisstream", busyOn: []float64{1, 1, 1},
		want: []string{"redis-server, the record store and the streams, 35.0µs → 450.0µs; the rest of the machine (the kernel, other tenants) 15.0µs → 50.0µs."},
		not:  []string{"the broker,"},
	}, {
		name: "kafka", kind: "kafka", busyOn: []float64{1, 1, 1},
		want: []string{"transport (its in-process broker included) 40.0µs → 150.0µs", "redis-server, the record store, 5.0µs → 300.0µs; the rest of the machine (the kernel, other tenants) 45.0µs → 200.0µs."},
		not:  []string{"the broker,"},
	}, {
		// One message in flight, each waiting 400µs on the store beside
		// the transport's own 100, 125 and 83µs: 0.2, 0.238 and 0.172.
		name: "one in flight", kind: "sql", busyOn: []float64{0.2, 0.2, 0.2}, oneInFlight: true,
		want: []string{"would be at most 1.04", "Verdict: out of reach with one message in flight, the most its adapter hands out (see docs/brokers.md): " +
			"each message waits 400.0µs on the store's Claim and Complete in series with the transport's own 100.0µs, so the ratio is at most 0.20, though the cores had room."},
	}, {
		// 0.2, 0.375 and 0.208.
		name: "unprofiled", kind: "amqp", busyOn: []float64{1, 1, 1}, unprofiled: true,
		want: []string{"would be at most 0.21", "Verdict: out of reach"},
		not:  []string{"Per message"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			name := receiverTargetPrefix + c.kind
			offs, ons := receiverRounds(flow.BrokerCommand(c.kind), c.busyOn, !c.unprofiled)
			for i := range ons {
				ons[i].Lanes, ons[i].StoreWait = 16, 400*time.Microsecond
				if c.oneInFlight {
					ons[i].Lanes = 1
				}
			}
			times := roundTimes{}
			other := "transport-sql" // another transport's round
			if c.kind == "sql" {
				other = "transport-nats"
			}
			times.add(other, receiverOn, flow.RoundTimes{Rate: 1, Busy: 0.001})
			for i := range offs {
				times.add(name, receiverOff, offs[i])
				times.add(name, receiverOn, ons[i])
			}
			rep := &bench.Report{Verdicts: []bench.Verdict{{Target: bench.Target{Name: name, Comparison: name, Goal: 0.8}, Value: 0.25}}}
			lines, err := times.receiverBound(context.Background(), rep)
			if err != nil || len(lines) != 1 {
				t.Fatalf("got %q, %v: want one line", lines, err)
			}
			for _, w := range c.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("bound %q lacks %q", lines[0], w)
				}
			}
			for _, w := range append(c.not, "lane") {
				if strings.Contains(lines[0], w) {
					t.Errorf("bound %q has %q", lines[0], w)
				}
			}
			rep.Verdicts[0].Pass = true
			if lines, _ := times.receiverBound(context.Background(), rep); len(lines) != 0 {
				t.Errorf("a met target got %q", lines)
			}
		})
	}
	// Without rounds, or without a reading of the cores, no bound.
	rep := &bench.Report{Verdicts: []bench.Verdict{{Target: bench.Target{Name: "transport-amqp", Comparison: "transport-amqp", Goal: 0.8}}}}
	if lines, _ := (roundTimes{}).receiverBound(context.Background(), rep); len(lines) != 0 {
		t.Errorf("a target without receiver rounds got %q", lines)
	}
	times := roundTimes{}
	offs, ons := receiverRounds("beam.smp", []float64{nan, nan, nan}, true)
	for i := range offs {
		times.add("transport-amqp", receiverOff, offs[i])
		times.add("transport-amqp", receiverOn, ons[i])
	}
	if lines, _ := times.receiverBound(context.Background(), rep); len(lines) != 0 {
		t.Errorf("a target without readings of the cores got %q", lines)
	}
}
