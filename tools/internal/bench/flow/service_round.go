package flow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/tools/internal/bench"
)

// round publishes n requests to the instance and waits until each has
// been charged, noticed and given a receipt (see ServiceBench.Round).
func (in *instance) round(ctx context.Context, o ServiceOptions, s *schema, n int) (RoundTimes, error) {
	before, err := scrapeClaimBatches(ctx, in.base)
	if err != nil {
		return RoundTimes{}, err
	}
	id := shortID()
	// Profiled, every round alike, so that a missed receiver-tax target
	// can say where a request's CPU went.
	p := newProgress(int64(n*len(in.routes)), bench.NewCPUMeter(true, bench.FindPeers(StoreServer, BrokerCommand(o.Kind))))
	defer p.cpu.Stop()
	in.current.Store(p)
	defer in.current.Store(nil)
	msgs := requestMessages(id, n)
	published := make(chan error, 1)
	go func() {
		published <- publishAll(ctx, in.producer, testdomain.TopicRequested, msgs, publishingOf(o.Kind))
	}()
	if err := p.wait(ctx); err != nil {
		return RoundTimes{}, errors.Join(err, <-published)
	}
	if err := <-published; err != nil {
		return RoundTimes{}, fmt.Errorf("publishing: %w", err)
	}
	if err := checkLedger(ctx, s, id, n); err != nil {
		return RoundTimes{}, err
	}
	after, err := scrapeClaimBatches(ctx, in.base)
	if err != nil {
		return RoundTimes{}, err
	}
	p.cpu.Stop()
	busy, process := math.NaN(), math.NaN()
	if first, last, ok := p.cpu.Times(); ok {
		busy, process = busyOver(&first, &last)
	}
	use, _ := p.cpu.Use()
	return RoundTimes{Rate: p.rate(n), Lanes: in.cfg.HandlerConcurrency, Busy: busy, Process: process,
		ClaimsPerBatch: after.since(before), Delivered: n, CPU: use}, nil
}

// requestMessages returns n events of requests of the anonymous client
// on testdomain.TopicRequested, as a producer sends them, with ids
// round-index (see requestID), each carrying its index as the transport
// rounds' messages do.
func requestMessages(round string, n int) []*message.Message {
	msgs := make([]*message.Message, n)
	for i := range msgs {
		msg := testdomain.Event{ID: requestID(round, i), Amount: 1000}.Message()
		msg.Metadata.Set(indexMetadata, strconv.Itoa(i))
		msgs[i] = msg
	}
	return msgs
}

// requestID is request i of round: round, "-", then i, so that a round's
// ids are those that start with round+"-" (see checkLedger).
func requestID(round string, i int) string { return round + "-" + strconv.Itoa(i) }

// checkLedger fails unless the ledger holds, of round's requests, exactly
// n charges, n notices and n receipts, each of a distinct request: every
// request charged once, noticed once, given one receipt.
func checkLedger(ctx context.Context, s *schema, round string, n int) error {
	t, err := testdomain.NewPostgresLedger(s.pool).Tally(ctx, round+"-")
	if err != nil {
		return fmt.Errorf("counting the round's effects in the ledger: %w", err)
	}
	want := testdomain.Counts{Rows: int64(n), IDs: int64(n)}
	if t.Charges != want || t.Notices != want || t.Receipts != want {
		return fmt.Errorf("the ledger holds %+v charges, %+v notices and %+v receipts of %d requests, want one of each per request",
			t.Charges, t.Notices, t.Receipts, n)
	}
	return nil
}

// progress is what the route functions of an instance did in one round:
// it ends when they have returned without error pending times in all,
// once per request and route.
type progress struct {
	pending  atomic.Int64
	calls    atomic.Int64
	first    atomic.Int64    // unix nanoseconds of the first call
	last     atomic.Int64    // unix nanoseconds of the latest return without error
	cpu      *bench.CPUMeter // from the first call to the last return
	done     chan struct{}
	doneOnce sync.Once
}

func newProgress(pending int64, cpu *bench.CPUMeter) *progress {
	p := &progress{cpu: cpu, done: make(chan struct{})}
	p.pending.Store(pending)
	return p
}

// began counts a call of a route function; a nil p (between rounds) does
// nothing.
func (p *progress) began() {
	if p == nil {
		return
	}
	p.calls.Add(1)
	if p.first.CompareAndSwap(0, time.Now().UnixNano()) {
		p.cpu.Start()
	}
}

// returned counts a return of a route function with err.
func (p *progress) returned(err error) {
	if p == nil || err != nil {
		return
	}
	now := time.Now().UnixNano()
	for {
		last := p.last.Load()
		if now <= last || p.last.CompareAndSwap(last, now) {
			break
		}
	}
	if p.pending.Add(-1) == 0 {
		p.doneOnce.Do(func() {
			p.cpu.Stop()
			close(p.done)
		})
	}
}

// wait returns once every expected return came, or an error when ctx ends
// or no route function was called for stallTimeout.
func (p *progress) wait(ctx context.Context) error {
	return waitDone(ctx, p.done, p.calls.Load, func() string {
		return fmt.Sprintf("with %d handler returns missing", p.pending.Load())
	})
}

// rate is requests per second from the first call to the last return.
func (p *progress) rate(requests int) float64 {
	elapsed := time.Duration(p.last.Load() - p.first.Load())
	if elapsed <= 0 {
		return math.NaN()
	}
	return float64(requests) / elapsed.Seconds()
}
