// Package batch coalesces concurrent calls into batches: natural batching,
// where batches grow with the load, and a batch under load waits a bounded
// moment to fill back up.
//
// A call that arrives while fewer than Config.Workers batches are in flight
// runs at once, alone, on the caller's goroutine: an idle or lightly loaded
// store adds no wait and no goroutine hop. A call that arrives while every
// worker is busy queues; when a worker finishes its batch it takes up to
// Config.MaxSize queued calls as the next batch. Batches therefore grow with
// the load and stay at one call without it.
//
// Under load, the callers of a batch that just finished come straight back
// with their next calls, a moment after the worker has taken whatever was
// queued: left alone, batches alternate between a few calls and the rest.
// With Config.Linger set, a worker whose queue holds fewer calls than its
// last batch carried waits up to Linger for it to fill back to that size,
// then sends what it has, or, if nothing came, stops. A worker whose last
// batch was one call never waits.
//
// The wait a call adds is the time it spends queued: at most the duration
// of the batch in flight ahead of it plus Linger, and never more than
// Config.Timeout (when set) before its batch is sent, because a call still
// queued after Timeout starts an extra worker, which has no last batch to
// fill back to and so sends the queue at once. One timer per Batcher, set
// for the oldest queued call, keeps that bound: queued calls cost no timer
// of their own.
package batch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Result is the outcome of one call of a batch.
type Result[Resp any] struct {
	Resp Resp
	Err  error
}

// Func runs one batch: it fills res[i] with the outcome of reqs[i]. It is
// called with len(reqs) >= 1 and len(res) == len(reqs).
//
// A batch of one that runs on its caller's goroutine gets that caller's
// context. A batch of queued calls gets a context that carries the first
// call's values, is never cancelled by a caller giving up (the others still
// want their answers), and has the latest of the callers' deadlines when
// every caller has one.
type Func[Req, Resp any] func(ctx context.Context, reqs []Req, res []Result[Resp])

// Observed returns fn telling observe, when it is not nil, the number of
// calls of every batch as it starts, under op: how full batches run. A
// call run alone counts as a batch of one.
func Observed[Req, Resp any](fn Func[Req, Resp], op string, observe func(op string, calls int)) Func[Req, Resp] {
	if observe == nil {
		return fn
	}
	return func(ctx context.Context, reqs []Req, res []Result[Resp]) {
		observe(op, len(reqs))
		fn(ctx, reqs, res)
	}
}

// Config bounds a Batcher.
type Config struct {
	// MaxSize is the most calls one batch carries. Values below 1 mean 1.
	MaxSize int
	// Workers is how many batches may be in flight at once before calls
	// queue. Values below 1 mean 1.
	Workers int
	// Timeout, when positive, bounds how long a call stays queued: after
	// it, the call starts an extra worker that sends the queue. Zero lets
	// calls wait for a worker to finish.
	Timeout time.Duration
	// Linger, when positive, is how long a worker waits for its queue to
	// fill back to the size of its last batch before sending it. Zero
	// sends whatever is queued at once.
	Linger time.Duration
}

// Or returns c with each zero setting taken from def.
func (c Config) Or(def Config) Config {
	if c.MaxSize == 0 {
		c.MaxSize = def.MaxSize
	}
	if c.Workers == 0 {
		c.Workers = def.Workers
	}
	if c.Timeout == 0 {
		c.Timeout = def.Timeout
	}
	if c.Linger == 0 {
		c.Linger = def.Linger
	}
	return c
}

// Batcher coalesces concurrent calls of one Func. It is safe for concurrent
// use. It starts goroutines only while calls are queued and keeps none when
// idle, so it needs no Close.
type Batcher[Req, Resp any] struct {
	fn  Func[Req, Resp]
	cfg Config

	mu      sync.Mutex
	queue   []*call[Req, Resp]
	running int // batches in flight, inline ones included
	// queued is told, without blocking, each time a call queues, so a
	// lingering worker looks at the queue again; nil without Linger.
	queued chan struct{}
	// watchdog runs expire when the oldest queued call may have waited
	// Timeout; watching says it is set. Made on first use; nil without
	// Timeout.
	watchdog *time.Timer
	watching bool
}

// call states.
const (
	waiting int32 = iota
	taken
	abandoned
)

type call[Req, Resp any] struct {
	ctx    context.Context
	req    Req
	queued time.Time // when it queued; only with Timeout
	state  atomic.Int32
	res    Result[Resp]
	done   chan struct{}
}

// New returns a Batcher that runs batches with fn.
func New[Req, Resp any](fn Func[Req, Resp], cfg Config) *Batcher[Req, Resp] {
	cfg.MaxSize = max(cfg.MaxSize, 1)
	cfg.Workers = max(cfg.Workers, 1)
	b := &Batcher[Req, Resp]{fn: fn, cfg: cfg}
	if cfg.Linger > 0 {
		b.queued = make(chan struct{}, 1)
	}
	return b
}

// Do runs req in a batch and returns its outcome.
//
// A context that is done before Do starts yields its error and runs
// nothing. One that ends while req is queued yields its error, and req is
// dropped from the queue without running. One that ends while req's batch is
// in flight yields its error at once; the batch runs on for the other calls,
// so req may or may not have taken effect.
func (b *Batcher[Req, Resp]) Do(ctx context.Context, req Req) (Resp, error) {
	if err := ctx.Err(); err != nil {
		var zero Resp
		return zero, err
	}
	b.mu.Lock()
	if b.running < b.cfg.Workers && len(b.queue) == 0 {
		b.running++
		b.mu.Unlock()
		return b.inline(ctx, req)
	}
	c := &call[Req, Resp]{ctx: ctx, req: req, done: make(chan struct{})}
	b.queue = append(b.queue, c)
	if b.cfg.Timeout > 0 {
		c.queued = time.Now()
		b.watchLocked(b.cfg.Timeout)
	}
	b.spawnLocked()
	b.mu.Unlock()
	if b.queued != nil {
		select {
		case b.queued <- struct{}{}:
		default:
		}
	}
	return b.wait(ctx, c)
}

// Queued returns how many calls wait in the queue for a worker. Tests use
// it to hold a batch until the calls they race have queued behind it.
func (b *Batcher[Req, Resp]) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// inline runs req alone on the caller's goroutine.
func (b *Batcher[Req, Resp]) inline(ctx context.Context, req Req) (Resp, error) {
	var res [1]Result[Resp]
	defer b.finished()
	b.fn(ctx, []Req{req}, res[:])
	return res[0].Resp, res[0].Err
}

// finished ends a batch and hands the queue, if any, to a worker.
func (b *Batcher[Req, Resp]) finished() {
	b.mu.Lock()
	b.running--
	b.spawnLocked()
	b.mu.Unlock()
}

// spawnLocked starts a worker when calls are queued and a worker is free.
func (b *Batcher[Req, Resp]) spawnLocked() {
	if len(b.queue) == 0 || b.running >= b.cfg.Workers {
		return
	}
	b.startWorkerLocked()
}

// startWorkerLocked starts a worker on the queue, counted as a batch in
// flight.
func (b *Batcher[Req, Resp]) startWorkerLocked() {
	b.running++
	go b.work()
}

// watchLocked sets the watchdog to fire after d, unless it is set: then it
// fires for an older call, no later than d.
func (b *Batcher[Req, Resp]) watchLocked(d time.Duration) {
	if b.watching {
		return
	}
	b.watching = true
	if b.watchdog == nil {
		b.watchdog = time.AfterFunc(d, b.expire)
		return
	}
	b.watchdog.Reset(d)
}

// expire starts an extra worker for every MaxSize calls at the head of the
// queue (what one worker takes) whose first call has waited Timeout, and
// sets the watchdog for the first call that has not. An extra worker has
// no last batch to fill back to, so it sends at once.
func (b *Batcher[Req, Resp]) expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.watching = false
	now := time.Now()
	for i := 0; i < len(b.queue); i += b.cfg.MaxSize {
		if left := b.cfg.Timeout - now.Sub(b.queue[i].queued); left > 0 {
			b.watchLocked(left)
			return
		}
		b.startWorkerLocked()
	}
}

func (b *Batcher[Req, Resp]) wait(ctx context.Context, c *call[Req, Resp]) (Resp, error) {
	select {
	case <-c.done:
		return c.res.Resp, c.res.Err
	case <-ctx.Done():
		// Queued: dropped unrun. Taken: in flight, outcome unknown.
		c.state.CompareAndSwap(waiting, abandoned)
		var zero Resp
		return zero, ctx.Err()
	}
}

// work sends batches from the queue until it is empty, letting the queue
// fill back to its last batch's size (see Config.Linger) before each batch
// after the first.
func (b *Batcher[Req, Resp]) work() {
	var (
		calls []*call[Req, Resp]
		reqs  []Req
		res   []Result[Resp]
		last  int // how many calls the last batch took from the queue
	)
	for {
		if b.cfg.Linger > 0 && last > 1 {
			b.fill(last)
		}
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), b.cfg.MaxSize)
		last = n
		calls = append(calls[:0], b.queue[:n]...)
		clear(b.queue[:n])
		b.queue = b.queue[n:]
		if len(b.queue) == 0 {
			b.queue = nil // let the backing array go
		}
		b.mu.Unlock()

		reqs, res = reqs[:0], res[:0]
		live := calls[:0]
		for _, c := range calls {
			if c.state.CompareAndSwap(waiting, taken) {
				live = append(live, c)
				reqs = append(reqs, c.req)
			}
		}
		if len(live) == 0 {
			continue
		}
		res = append(res, make([]Result[Resp], len(live))...)
		ctx, cancel := batchContext(live)
		b.fn(ctx, reqs, res)
		cancel()
		for i, c := range live {
			c.res = res[i]
			close(c.done)
		}
		clear(calls)
	}
}

// fill waits until the queue holds want calls or Linger has passed. It
// waits on an empty queue too: the callers of a batch that took the whole
// queue are on their way back.
func (b *Batcher[Req, Resp]) fill(want int) {
	var expired <-chan time.Time
	for {
		b.mu.Lock()
		n := len(b.queue)
		b.mu.Unlock()
		if n >= want {
			return
		}
		if expired == nil {
			t := time.NewTimer(b.cfg.Linger)
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-b.queued:
		case <-expired:
			return
		}
	}
}

// batchContext is the context of a batch of queued calls (see Func).
func batchContext[Req, Resp any](calls []*call[Req, Resp]) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, c := range calls {
		d, ok := c.ctx.Deadline()
		if !ok {
			return context.WithoutCancel(calls[0].ctx), func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(calls[0].ctx), latest)
}
