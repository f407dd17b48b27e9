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

// concurrencyReport is a report whose target name (of comparison, on
// contenders of and over) was missed at 2.0 against 5, its rounds'
// rates in results.
func concurrencyReport(name, comparison, of, over string, rates map[string][]float64) *bench.Report {
	var samples []bench.Samples
	for contender, vs := range rates {
		samples = append(samples, bench.Samples{Contender: contender, Values: vs, Median: medianOf(vs)})
	}
	return &bench.Report{
		Results: []bench.Result{{Name: comparison, Samples: samples}},
		Verdicts: []bench.Verdict{{Target: bench.Target{Name: name, Comparison: comparison, Of: of, Over: over,
			Op: bench.AtLeast, Goal: 5}, Value: 2}},
	}
}

// The concurrency bound takes each figure round by round from the rounds
// of the target's own contenders, and names what held the rate back: the
// cores when even all of them busy could not reach the goal, the lanes
// when the transport kept fewer than half busy, else the lanes' time.
func TestConcurrencyBoundOfATransport(t *testing.T) {
	const us = time.Microsecond
	for _, c := range []struct {
		name  string
		highs []flow.RoundTimes
		want  []string
	}{{
		// 4000/0.8/1000 = 5, 3000/1/1000 = 3, 1500/0.1/1000 = 15: median 5;
		// 16, 12 and 6 lanes busy: median 12.
		name: "cores", highs: []flow.RoundTimes{
			{Rate: 4000, Busy: 0.8, Process: 0.5, Lanes: 16, Handling: 4 * time.Millisecond, StoreWait: 3 * time.Millisecond},
			{Rate: 3000, Busy: 1, Process: 0.6, Lanes: 16, Handling: 4 * time.Millisecond, StoreWait: 3 * time.Millisecond},
			{Rate: 1500, Busy: 0.1, Process: 0.05, Lanes: 16, Handling: 4 * time.Millisecond, StoreWait: 3 * time.Millisecond},
		},
		want: []string{"Bound: concurrency-amqp: with 16 messages in flight per handler the receiver-on rounds pass 3000 msg/s, with one 1000 (measured 2.000, goal 5).",
			"cores were 80% busy with 16 in flight (50% of them by this process, the rest by the brokers and any other tenant; 50% busy with one)", "would be at most 5.00",
			"The 16 lanes held 12.0 messages at a time on average", "each taking 4ms in its lane against 900µs with one in flight, 3ms of it waiting on the store against 500µs",
			"Verdict: within reach of the cores and the lanes were busy"},
	}, {
		name: "saturated", highs: []flow.RoundTimes{
			{Rate: 2000, Busy: 1, Lanes: 16, Handling: 8 * time.Millisecond},
			{Rate: 2000, Busy: 1, Lanes: 16, Handling: 8 * time.Millisecond},
			{Rate: 2000, Busy: 1, Lanes: 16, Handling: 8 * time.Millisecond},
		},
		want: []string{"would be at most 2.00", "Verdict: out of reach on this machine: its cores"},
	}, {
		// 2000 msg/s x 2ms: 4 of 16 lanes busy.
		name: "lanes", highs: []flow.RoundTimes{
			{Rate: 2000, Busy: 0.2, Lanes: 16, Handling: 2 * time.Millisecond},
			{Rate: 2000, Busy: 0.2, Lanes: 16, Handling: 2 * time.Millisecond},
			{Rate: 2000, Busy: 0.2, Lanes: 16, Handling: 2 * time.Millisecond},
		},
		want: []string{"held 4.0 messages", "Verdict: bound by the transport: it kept fewer than half its lanes busy"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			times := roundTimes{}
			for i, h := range c.highs {
				times.add("transport-amqp", receiverOn, h)
				times.add("transport-amqp", receiverOne, flow.RoundTimes{Rate: 1000, Busy: []float64{0.5, 0.4, 0.6}[i], Lanes: 1,
					Handling: 900 * us, StoreWait: 500 * us})
			}
			times.add("transport-kafka", receiverOn, flow.RoundTimes{Rate: 1, Busy: 1, Lanes: 16}) // another transport's
			rep := concurrencyReport("concurrency-amqp", "transport-amqp", receiverOn, receiverOne, nil)
			lines, err := times.concurrencyBound(context.Background(), rep)
			if err != nil || len(lines) != 1 {
				t.Fatalf("got %q, %v: want one line", lines, err)
			}
			for _, w := range c.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("bound %q lacks %q", lines[0], w)
				}
			}
			rep.Verdicts[0].Pass = true
			if lines, _ := times.concurrencyBound(context.Background(), rep); len(lines) != 0 {
				t.Errorf("a met target got %q", lines)
			}
		})
	}
}

// On the service the plain consumer bounds the ratio too: the service
// cannot pass more than the producer and broker hand a consumer that only
// acks. Without CPU readings, the cores are left out.
func TestConcurrencyBoundOfTheService(t *testing.T) {
	times := roundTimes{}
	for _, plain := range []float64{3000, 2000, 4000} {
		nan := math.NaN()
		times.add("service-nats", plainAck, flow.RoundTimes{Rate: plain, Busy: nan, Process: nan})
		times.add("service-nats", serviceDef, flow.RoundTimes{Rate: 1500, Busy: nan, Process: nan, Lanes: 16})
		times.add("service-nats", serviceOne, flow.RoundTimes{Rate: 1000, Busy: nan, Process: nan, Lanes: 1})
	}
	rep := concurrencyReport("service-concurrency-nats", "service-nats", serviceDef, serviceOne, nil)
	lines, err := times.concurrencyBound(context.Background(), rep)
	if err != nil || len(lines) != 1 {
		t.Fatalf("got %q, %v: want one line", lines, err)
	}
	for _, w := range []string{"the service passes 1500 requests/s, with one 1000",
		"receives 3.00 x the service's rate with one in flight", "Verdict: out of reach of the producer and the broker"} {
		if !strings.Contains(lines[0], w) {
			t.Errorf("bound %q lacks %q", lines[0], w)
		}
	}
	for _, absent := range []string{"cores", "lanes held"} {
		if strings.Contains(lines[0], absent) {
			t.Errorf("bound %q speaks of %s it did not measure", lines[0], absent)
		}
	}
	// Rounds that do not pair up say nothing.
	times.add("service-nats", serviceDef, flow.RoundTimes{Rate: 1})
	if lines, _ := times.concurrencyBound(context.Background(), rep); len(lines) != 0 {
		t.Errorf("unpaired rounds got %q", lines)
	}
}

func TestFillNote(t *testing.T) {
	times := roundTimes{}
	for _, m := range []float64{2, 3, 9} {
		times.add("transport-kafka", receiverOn, flow.RoundTimes{ClaimsPerBatch: m})
		times.add("transport-kafka", receiverOne, flow.RoundTimes{ClaimsPerBatch: 1})
		times.add("transport-kafka", receiverOff, flow.RoundTimes{ClaimsPerBatch: math.NaN()})
		times.add("service-amqp", serviceDef, flow.RoundTimes{ClaimsPerBatch: m + 1})
	}
	times.add("transport-sql", receiverOn, flow.RoundTimes{ClaimsPerBatch: 1})
	lines, err := times.fillNote(context.Background(), &bench.Report{})
	if err != nil || len(lines) != 1 {
		t.Fatalf("got %q, %v", lines, err)
	}
	for _, w := range []string{"transport-kafka 3.0 (1.0 with one in flight), transport-sql 1.0;", "service-amqp 4.0."} {
		if !strings.Contains(lines[0], w) {
			t.Errorf("fill %q lacks %q", lines[0], w)
		}
	}
	if lines, _ := (roundTimes{}).fillNote(context.Background(), &bench.Report{}); len(lines) != 0 {
		t.Errorf("no rounds, yet %q", lines)
	}
}

// Each line of the transport sweep names one transport and the receiver
// on or off, and leads back to them.
func TestSweepLines(t *testing.T) {
	seen := map[bench.Backend]bool{}
	for _, kind := range inFlightKinds {
		for _, receiver := range []bool{true, false} {
			line := sweepLine(kind, receiver)
			if seen[line] {
				t.Errorf("line %q twice", line)
			}
			seen[line] = true
			if k, r := sweepKind(line); k != kind || r != receiver {
				t.Errorf("sweepKind(%q) = %s, %v", line, k, r)
			}
		}
	}
	if k, _ := sweepKind("sql on"); k != "" {
		t.Errorf("the sql transport has a line: %q", k)
	}
}
