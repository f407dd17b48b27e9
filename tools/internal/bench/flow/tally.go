package flow

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/tools/internal/bench"
)

// indexMetadata carries a message's index in its round, which the handler
// counts its executions by.
const indexMetadata = "bench_index"

// stallTimeout is how long a round may go without a delivery before it
// fails: a message lost, or a broker that stopped answering.
const stallTimeout = 60 * time.Second

// tally counts what the routers of one round did: every delivery that was
// acked (duplicates included) and every execution of the handler per
// message index.
type tally struct {
	total      int64 // the deliveries that end the round
	delivered  atomic.Int64
	executions []atomic.Int32
	first      atomic.Int64    // unix nanoseconds at which the first delivery began
	last       atomic.Int64    // unix nanoseconds at which the latest ack came
	storeWait  atomic.Int64    // nanoseconds the receiver waited on its store (waitingStore)
	handling   atomic.Int64    // nanoseconds inside the middlewares below count and the handler
	claims     atomic.Int64    // Claims the receiver's store sent in batches (observeBatch)
	batches    atomic.Int64    // and the batches that carried them
	cpu        *bench.CPUMeter // from the first delivery to the last ack
	done       chan struct{}
	doneOnce   sync.Once
	stop       chan struct{} // closed when the round is over
	stopOnce   sync.Once
}

// newTally returns the tally of a round of total deliveries of unique
// messages, its span's CPU read by cpu, or by a meter of the machine's
// times alone when nil.
func newTally(unique, total int, cpu *bench.CPUMeter) *tally {
	if cpu == nil {
		cpu = bench.NewCPUMeter(false, nil)
	}
	return &tally{total: int64(total), executions: make([]atomic.Int32, unique), cpu: cpu,
		done: make(chan struct{}), stop: make(chan struct{})}
}

// close ends the waits for acks still pending when the round is over, and
// its CPU meter, should the round have failed.
func (t *tally) close() {
	t.stopOnce.Do(func() { close(t.stop) })
	t.cpu.Stop()
}

// count is the outermost middleware: it times the deliveries, and what
// runs inside it, and counts each delivery once the router acks it (after
// publishing what it produced).
func (t *tally) count(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		start := time.Now()
		if t.first.CompareAndSwap(0, start.UnixNano()) {
			t.cpu.Start()
		}
		out, err := h(msg)
		t.handling.Add(int64(time.Since(start)))
		if err == nil {
			go t.acked(msg)
		}
		return out, err
	}
}

// acked counts msg once it is acked.
func (t *tally) acked(msg *message.Message) {
	select {
	case <-msg.Acked():
	case <-msg.Nacked():
		return
	case <-t.stop:
		return
	}
	t.finished(time.Now())
	if t.delivered.Add(1) >= t.total {
		t.doneOnce.Do(func() {
			t.cpu.Stop()
			close(t.done)
		})
	}
}

// finished moves the end of the round to at, if later.
func (t *tally) finished(at time.Time) {
	for {
		last := t.last.Load()
		if at.UnixNano() <= last || t.last.CompareAndSwap(last, at.UnixNano()) {
			return
		}
	}
}

// execute records one execution of the handler for msg's index.
func (t *tally) execute(msg *message.Message) error {
	i, err := strconv.Atoi(msg.Metadata.Get(indexMetadata))
	if err != nil || i < 0 || i >= len(t.executions) {
		return fmt.Errorf("message %s has no valid %s", msg.UUID, indexMetadata)
	}
	t.executions[i].Add(1)
	return nil
}

// wait returns once every delivery was acked, or an error when ctx ends or
// no delivery was acked for stallTimeout.
func (t *tally) wait(ctx context.Context) error {
	return waitDone(ctx, t.done, t.delivered.Load, func() string {
		return fmt.Sprintf("at %d of %d deliveries", t.delivered.Load(), t.total)
	})
}

// waitDone returns once done closes, or an error when ctx ends or count has
// not moved for stallTimeout; where says how far the round got.
func waitDone(ctx context.Context, done <-chan struct{}, count func() int64, where func() string) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	seen, since := int64(-1), time.Now()
	for {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("round ended %s: %w", where(), context.Cause(ctx))
		case now := <-tick.C:
			if n := count(); n != seen {
				seen, since = n, now
			} else if now.Sub(since) > stallTimeout {
				return fmt.Errorf("round stalled %s for %v", where(), stallTimeout)
			}
		}
	}
}

// rate is the deliveries per second from the first delivery to the last ack.
func (t *tally) rate() float64 {
	elapsed := time.Duration(t.last.Load() - t.first.Load())
	if elapsed <= 0 {
		return 0
	}
	return float64(t.delivered.Load()) / elapsed.Seconds()
}

// observeBatch is the receiver's store's BatchObserver: it counts claim
// batches and the Claims they carried.
func (t *tally) observeBatch(op string, calls int) {
	if op == "claim" {
		t.batches.Add(1)
		t.claims.Add(int64(calls))
	}
}

// claimsPerBatch is the mean Claims per claim batch of the round, NaN when
// the store sent none.
func (t *tally) claimsPerBatch() float64 {
	n := t.batches.Load()
	if n == 0 {
		return math.NaN()
	}
	return float64(t.claims.Load()) / float64(n)
}

// busy is the share of the machine's CPU time that was busy from the first
// delivery to the last ack, and the share this process ran, NaN when they
// could not be read. Call it once wait has returned nil.
func (t *tally) busy() (busy, process float64) {
	first, last, ok := t.cpu.Times()
	if !ok {
		return busyOver(nil, nil)
	}
	return busyOver(&first, &last)
}

// storeWaitPerDelivery is the time the receiver waited on its store calls
// over the round, per delivery acked; zero with the receiver off.
func (t *tally) storeWaitPerDelivery() time.Duration { return t.perDelivery(&t.storeWait) }

// handlingPerDelivery is the time spent inside count, in the receiver (when
// on) and the handler, per delivery acked.
func (t *tally) handlingPerDelivery() time.Duration { return t.perDelivery(&t.handling) }

func (t *tally) perDelivery(total *atomic.Int64) time.Duration {
	n := t.delivered.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(total.Load() / n)
}

// executionCounts returns the handler's executions per message index.
func (t *tally) executionCounts() []int {
	out := make([]int, len(t.executions))
	for i := range t.executions {
		out[i] = int(t.executions[i].Load())
	}
	return out
}
