package traffic

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/time/rate"

	"github.com/onceflow/onceflow/handlers"
)

// loadCounters are a run's live counts, read by the progress display.
type loadCounters struct {
	sent, failed atomic.Int64
}

// runLoad sends tr's traffic through send with opts.Concurrency workers,
// paced by one limiter at opts.Rate, until opts.Duration has passed, tr
// runs out (opts.Count) or ctx ends. The limiter's burst is the
// concurrency: after a stall in which every worker waited on a slow send,
// up to that many sends catch up on the lost time, so the run keeps to its
// rate; it never exceeds Concurrency + Rate x Duration sends. A send that
// has begun is never cut short by the end of the duration. It fills in the
// counts, rate and latency of the result.
func runLoad(ctx context.Context, opts LoadOptions, tr *traffic, send func(context.Context, handlers.Payment) error) LoadResult {
	limit := rate.Inf
	if opts.Rate > 0 {
		limit = rate.Limit(opts.Rate)
	}
	limiter := rate.NewLimiter(limit, opts.Concurrency)
	run := newRunID()
	var (
		counters loadCounters
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		hists    = make([]*hdrhistogram.Histogram, opts.Concurrency)
	)
	start := time.Now()
	sending, stop := context.WithDeadline(ctx, start.Add(opts.Duration))
	defer stop()
	stopProgress := showProgress(opts, &counters, start)
	for w := range opts.Concurrency {
		hists[w] = newLatencyHistogram()
		wg.Go(func() {
			for limiter.Wait(sending) == nil {
				i, ok := tr.next()
				if !ok {
					return
				}
				p := demoPayment(run, i)
				began := time.Now()
				err := send(ctx, p)
				took := time.Since(began)
				tr.done(i, err == nil)
				if err != nil {
					counters.failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("sending %s: %w", p.ID, err)
					}
					mu.Unlock()
					continue
				}
				counters.sent.Add(1)
				recordLatency(hists[w], took)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()

	all := newLatencyHistogram()
	for _, h := range hists {
		all.Merge(h)
	}
	res := LoadResult{
		Sent: counters.sent.Load(), Errors: counters.failed.Load(), FirstError: firstErr,
		Elapsed: elapsed, Rate: float64(counters.sent.Load()) / elapsed.Seconds(),
	}
	if all.TotalCount() > 0 {
		res.P50 = time.Duration(all.ValueAtPercentile(50)) * time.Microsecond
		res.P99 = time.Duration(all.ValueAtPercentile(99)) * time.Microsecond
		res.Max = time.Duration(all.Max()) * time.Microsecond
	}
	return res
}

// maxLatency is the largest latency a histogram tells apart; a slower send
// is recorded as this long. The HTTP client gives up after 10 s.
const maxLatency = time.Minute

// newLatencyHistogram records latencies in microseconds, from 1 µs to
// maxLatency, to 3 significant digits.
func newLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, maxLatency.Microseconds(), 3)
}

func recordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(max(1, min(d.Microseconds(), maxLatency.Microseconds())))
}
