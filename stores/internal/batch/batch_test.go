package batch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/onceflow/onceflow/stores/internal/batch"
)

// recorder is a Func that answers each request with itself doubled, fails
// odd requests when asked, and records the batches it ran.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	started chan struct{} // told when the first batch starts
	gate    chan struct{} // the first batch waits until it is closed
	failOdd bool
	once    sync.Once
}

// run records the batch as it starts, so that the batches read in the order
// they were sent, then holds the first one until gate is closed.
func (r *recorder) run(ctx context.Context, reqs []int, res []batch.Result[int]) {
	r.mu.Lock()
	r.batches = append(r.batches, append([]int(nil), reqs...))
	r.mu.Unlock()
	r.once.Do(func() {
		close(r.started)
		<-r.gate
	})
	for i, q := range reqs {
		if r.failOdd && q%2 == 1 {
			res[i].Err = fmt.Errorf("request %d failed", q)
			continue
		}
		res[i].Resp = 2 * q
	}
}

func (r *recorder) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []int
	for _, b := range r.batches {
		s = append(s, len(b))
	}
	return s
}

func TestIdleCallRunsInlineWithCallersContext(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "mine")
	var sameGoroutineCtx bool
	b := batch.New(func(got context.Context, reqs []int, res []batch.Result[int]) {
		sameGoroutineCtx = got == ctx
		res[0].Resp = reqs[0] + 1
	}, batch.Config{MaxSize: 8, Workers: 1})
	got, err := b.Do(ctx, 41)
	if err != nil || got != 42 {
		t.Fatalf("Do = %d, %v, want 42", got, err)
	}
	// Written without synchronisation: the race detector fails the test
	// if the batch ran on another goroutine.
	if !sameGoroutineCtx {
		t.Fatal("an idle call did not run with the caller's own context")
	}
}

// The tests below that depend on when goroutines block or timers fire run
// in a synctest bubble: the batcher uses only goroutines, channels, mutexes
// and timers, so synctest.Wait tells when every call has queued, and the
// bubble's clock makes Timeout and Linger exact.

// queueBehind occupies the only worker with a batch blocked on gate, then
// queues n calls behind it and returns their outcomes once all are done.
// Once every call has queued, and before the gate opens, it calls queued,
// when set. Call it in a synctest bubble.
func queueBehind(t *testing.T, b *batch.Batcher[int, int], r *recorder, n int, ctxFor func(i int) context.Context, queued func()) ([]int, []error) {
	t.Helper()
	first := make(chan struct{})
	go func() { defer close(first); _, _ = b.Do(context.Background(), 1000) }()
	<-r.started
	got, errs := make([]int, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = b.Do(ctxFor(i), i) })
	}
	synctest.Wait() // every call is queued
	if queued != nil {
		queued()
	}
	close(r.gate)
	wg.Wait()
	<-first
	return got, errs
}

// background is every call's context in queueBehind.
func background(int) context.Context { return context.Background() }

func TestQueuedCallsGetTheirOwnResultsAndErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{started: make(chan struct{}), gate: make(chan struct{}), failOdd: true}
		b := batch.New(r.run, batch.Config{MaxSize: 100, Workers: 1})
		const n = 40
		got, errs := queueBehind(t, b, r, n, background, nil)
		for i := range n {
			if i%2 == 1 {
				if errs[i] == nil || errs[i].Error() != fmt.Sprintf("request %d failed", i) {
					t.Fatalf("call %d: error %v, want its own failure", i, errs[i])
				}
				continue
			}
			if errs[i] != nil || got[i] != 2*i {
				t.Fatalf("call %d = %d, %v, want %d", i, got[i], errs[i], 2*i)
			}
		}
		// The blocked batch of one, then the queue in as few batches as the
		// size allows: here one.
		if s := r.sizes(); len(s) != 2 || s[0] != 1 || s[1] != n {
			t.Fatalf("batch sizes %v, want [1 %d]", s, n)
		}
	})
}

func TestBatchesRespectMaxSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{started: make(chan struct{}), gate: make(chan struct{})}
		b := batch.New(r.run, batch.Config{MaxSize: 7, Workers: 1})
		const n = 30
		_, errs := queueBehind(t, b, r, n, background, nil)
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if s := r.sizes(); fmt.Sprint(s) != "[1 7 7 7 7 2]" {
			t.Fatalf("batch sizes %v, want 1 then %d calls in batches of at most 7", s, n)
		}
	})
}

func TestCancelledQueuedCallIsDroppedOthersAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{started: make(chan struct{}), gate: make(chan struct{})}
		b := batch.New(r.run, batch.Config{MaxSize: 100, Workers: 1})
		cancelled, cancel := context.WithCancel(context.Background())
		const n, victim = 10, 3
		got, errs := queueBehind(t, b, r, n, func(i int) context.Context {
			if i == victim {
				return cancelled
			}
			return context.Background()
		}, func() {
			cancel()
			synctest.Wait() // the victim has given up
		})
		for i := range n {
			if i == victim {
				if !errors.Is(errs[i], context.Canceled) {
					t.Fatalf("cancelled call: error %v, want context.Canceled", errs[i])
				}
				continue
			}
			if errs[i] != nil || got[i] != 2*i {
				t.Fatalf("call %d = %d, %v", i, got[i], errs[i])
			}
		}
		if s := r.sizes(); fmt.Sprint(s) != fmt.Sprint([]int{1, n - 1}) {
			t.Fatalf("batch sizes %v, want [1 %d]: every call but the cancelled one", s, n-1)
		}
		for _, bt := range r.batches {
			for _, q := range bt {
				if q == victim {
					t.Fatal("the call cancelled while queued was run")
				}
			}
		}
	})
}

func TestDoneContextRunsNothing(t *testing.T) {
	var runs atomic.Int32
	b := batch.New(func(context.Context, []int, []batch.Result[int]) { runs.Add(1) }, batch.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Do(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
	if runs.Load() != 0 {
		t.Fatal("a call with a done context ran")
	}
}

func TestTimeoutStartsAnExtraWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 5 * time.Millisecond
		started, gate := make(chan struct{}), make(chan struct{})
		defer close(gate)
		b := batch.New(func(ctx context.Context, reqs []int, res []batch.Result[int]) {
			if reqs[0] == 1000 {
				close(started)
				<-gate
			}
		}, batch.Config{MaxSize: 100, Workers: 1, Timeout: timeout})
		go func() { _, _ = b.Do(context.Background(), 1000) }()
		<-started
		// The only worker stays blocked: the queued call is sent only if its
		// timeout starts an extra worker, and then exactly at its timeout.
		if waited := answered(t, b); waited != timeout {
			t.Fatalf("a queued call was answered after %v, want its timeout %v", waited, timeout)
		}
	})
}

// A backlog of several batches' worth gets an extra worker per batch, so
// that none of its calls waits for the others' batches; calls that queue
// later are watched for in turn.
func TestTimeoutSendsEachBatchOfABacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxSize, batches, timeout = 2, 3, 5 * time.Millisecond
		started, gate, backlogGate := make(chan struct{}), make(chan struct{}), make(chan struct{})
		defer close(gate)
		var inFlight atomic.Int32
		b := batch.New(func(ctx context.Context, reqs []int, res []batch.Result[int]) {
			switch reqs[0] {
			case 1000:
				close(started)
				<-gate
			case 1:
				inFlight.Add(1)
				<-backlogGate
			}
		}, batch.Config{MaxSize: maxSize, Workers: 1, Timeout: timeout})
		go func() { _, _ = b.Do(context.Background(), 1000) }()
		<-started
		errs := make(chan error, maxSize*batches)
		for range maxSize * batches {
			go func() { _, err := b.Do(context.Background(), 1); errs <- err }()
		}
		time.Sleep(timeout)
		synctest.Wait()
		if n := inFlight.Load(); n != batches {
			t.Fatalf("%d of the backlog's %d batches in flight once its timeout passed, want all: one waits for another", n, batches)
		}
		close(backlogGate)
		for range maxSize * batches {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if waited := answered(t, b); waited != timeout {
			t.Fatalf("a call queued after the backlog was answered after %v, want its timeout %v", waited, timeout)
		}
	})
}

// answered makes a call, fails the test unless it is answered without
// error within a minute, and returns how long it took. Call it in a
// synctest bubble: the time is the bubble's.
func answered(t *testing.T, b *batch.Batcher[int, int]) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { _, err := b.Do(context.Background(), 7); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a queued call was never answered")
	}
	return time.Since(start)
}

func TestWithoutTimeoutQueuedCallWaitsForAWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started, gate := make(chan struct{}), make(chan struct{})
		b := batch.New(func(ctx context.Context, reqs []int, res []batch.Result[int]) {
			if reqs[0] == 1000 {
				close(started)
				<-gate
			}
		}, batch.Config{MaxSize: 100, Workers: 1})
		go func() { _, _ = b.Do(context.Background(), 1000) }()
		<-started
		done := make(chan error, 1)
		go func() { _, err := b.Do(context.Background(), 7); done <- err }()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("a queued call ran while the only worker was busy")
		default:
		}
		close(gate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestQueuedBatchOutlivesACallersDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var deadline time.Time
		var hasDeadline bool
		started, gate := make(chan struct{}), make(chan struct{})
		b := batch.New(func(ctx context.Context, reqs []int, res []batch.Result[int]) {
			if reqs[0] == 1000 {
				close(started)
				<-gate
				return
			}
			deadline, hasDeadline = ctx.Deadline()
		}, batch.Config{MaxSize: 10, Workers: 1})
		go func() { _, _ = b.Do(context.Background(), 1000) }()
		<-started
		short, cancel1 := context.WithTimeout(context.Background(), time.Minute)
		defer cancel1()
		long, cancel2 := context.WithTimeout(context.Background(), time.Hour)
		defer cancel2()
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = b.Do(short, 1) })
		wg.Go(func() { _, _ = b.Do(long, 2) })
		synctest.Wait() // both queued
		close(gate)
		wg.Wait()
		want, _ := long.Deadline()
		if !hasDeadline || !deadline.Equal(want) {
			t.Fatalf("batch deadline %v (%v), want the latest caller's %v", deadline, hasDeadline, want)
		}
	})
}

func TestBatchKeepsArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{started: make(chan struct{}), gate: make(chan struct{})}
		b := batch.New(r.run, batch.Config{MaxSize: 100, Workers: 1})
		go func() { _, _ = b.Do(context.Background(), 1000) }()
		<-r.started
		const n = 10
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { _, _ = b.Do(context.Background(), i) })
			synctest.Wait() // each call queues before the next
		}
		close(r.gate)
		wg.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.batches) != 2 || fmt.Sprint(r.batches[1]) != "[0 1 2 3 4 5 6 7 8 9]" {
			t.Fatalf("batches %v, want the queued calls in arrival order", r.batches)
		}
	})
}

// lingering returns a one-worker batcher whose worker has just sent a batch
// of four queued calls and so lingers for four more, with the recorder of
// its batches. Call it in a synctest bubble.
func lingering(t *testing.T, cfg batch.Config) (*batch.Batcher[int, int], *recorder) {
	t.Helper()
	r := &recorder{started: make(chan struct{}), gate: make(chan struct{})}
	cfg.MaxSize, cfg.Workers = 100, 1
	b := batch.New(r.run, cfg)
	if _, errs := queueBehind(t, b, r, 4, background, nil); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	if s := r.sizes(); fmt.Sprint(s) != "[1 4]" {
		t.Fatalf("batch sizes %v, want [1 4]", s)
	}
	return b, r
}

// Calls that trickle in while the worker lingers go as one batch of the
// last batch's size, not one by one.
func TestLingerFillsTheNextBatchBackToTheLastSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const linger = time.Minute
		b, r := lingering(t, batch.Config{Linger: linger})
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				if _, err := b.Do(context.Background(), i); err != nil {
					t.Error(err)
				}
			})
			time.Sleep(10 * time.Millisecond)
		}
		wg.Wait()
		if s := r.sizes(); fmt.Sprint(s) != "[1 4 4]" {
			t.Fatalf("batch sizes %v, want [1 4 4]: the trickle in one batch", s)
		}
		time.Sleep(linger) // the worker lingers for four more, in vain, and stops
	})
}

// A lingering worker sends what it has once Linger passes.
func TestLingerEndsAfterLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const linger = 50 * time.Millisecond
		b, r := lingering(t, batch.Config{Linger: linger})
		if waited := answered(t, b); waited != linger {
			t.Fatalf("a lone call waited %v with Linger %v, want exactly the linger", waited, linger)
		}
		if s := r.sizes(); fmt.Sprint(s) != "[1 4 1]" {
			t.Fatalf("batch sizes %v, want [1 4 1]", s)
		}
	})
}

// Timeout bounds the linger too: a call queued past it starts a worker that
// sends at once.
func TestTimeoutCutsALingerShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const linger, timeout = time.Hour, 20 * time.Millisecond
		b, _ := lingering(t, batch.Config{Linger: linger, Timeout: timeout})
		if waited := answered(t, b); waited != timeout {
			t.Fatalf("a queued call waited %v with Linger %v, want its timeout %v", waited, linger, timeout)
		}
		time.Sleep(linger) // the lingering worker stops
	})
}

func TestConfigOrFillsOnlyZeroSettings(t *testing.T) {
	got := batch.Config{MaxSize: 8, Timeout: time.Second}.Or(batch.Config{MaxSize: 64, Workers: 2, Timeout: time.Millisecond, Linger: time.Microsecond})
	want := batch.Config{MaxSize: 8, Workers: 2, Timeout: time.Second, Linger: time.Microsecond}
	if got != want {
		t.Fatalf("Or = %+v, want %+v", got, want)
	}
}

// Observed tells its observer each batch's size under its op as the batch
// starts, the call run alone included.
func TestObservedTellsEachBatchSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{started: make(chan struct{}), gate: make(chan struct{})}
		var (
			mu   sync.Mutex
			seen []string
		)
		observe := func(op string, calls int) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%s:%d", op, calls))
		}
		b := batch.New(batch.Observed(r.run, "claim", observe), batch.Config{MaxSize: 100, Workers: 1})
		const n = 12
		if _, errs := queueBehind(t, b, r, n, background, nil); errors.Join(errs...) != nil {
			t.Fatal(errors.Join(errs...))
		}
		mu.Lock()
		defer mu.Unlock()
		if got, want := fmt.Sprint(seen), "[claim:1 claim:12]"; got != want {
			t.Fatalf("observed %s, want %s (batches %v)", got, want, r.sizes())
		}
	})
}
