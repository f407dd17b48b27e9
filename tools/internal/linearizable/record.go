package linearizable

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/onceflow/onceflow/stores"
)

// history is what a run recorded.
type history struct {
	ops      []porcupine.Operation
	faults   []faultSpan
	outcomes map[string]int // calls by method and outcome
	unsent   int            // calls left out: they never reached the backend
	// ownerLeasesEnded counts owners' calls refused because their lease
	// had ended or been taken over.
	ownerLeasesEnded int
	// overtime counts the calls made past Config.Duration for coverage.
	overtime   int
	unexpected []string // errors the contract does not name, at most a few
	took       time.Duration
}

// faultSpan is one injection of a fault.
type faultSpan struct {
	name       string
	start, end int64
	err        error
}

// recorder drives one store and timestamps every call. Times are
// nanoseconds since epoch, by the wall clock, which is what the stores'
// timestamps use.
type recorder struct {
	store stores.Store
	admin stores.Admin // nil when the store has no Lookup
	cfg   Config
	keys  []string
	epoch int64

	mu sync.Mutex // guards the history's counts
	h  history
}

// record runs cfg.Clients clients against s for cfg.Duration, and past it
// while the run lacks coverage (see recorder.overtime), injecting
// cfg.Faults meanwhile, and returns their history.
func record(s stores.Store, cfg Config) *history {
	r := &recorder{store: s, cfg: cfg, epoch: time.Now().UnixNano()}
	if !cfg.NoLookup {
		r.admin, _ = s.(stores.Admin)
	}
	r.h.outcomes = map[string]int{}
	run := stores.NewToken()[:8] // keys of no other run, on a shared backend
	for i := range cfg.Keys {
		r.keys = append(r.keys, fmt.Sprintf("lin-%s-k%d", run, i))
	}
	begin := time.Now()
	deadline := begin.Add(cfg.Duration)
	stop := make(chan struct{})

	var faults sync.WaitGroup
	spans := make([][]faultSpan, len(cfg.Faults))
	for i, f := range cfg.Faults {
		faults.Go(func() { spans[i] = r.inject(f, begin, stop) })
	}
	var clients sync.WaitGroup
	perClient := make([][]porcupine.Operation, cfg.Clients)
	for id := range cfg.Clients {
		c := &client{
			r: r, id: id, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(id))),
			held: map[string]holding{}, stale: map[string][]stores.Token{},
		}
		clients.Go(func() { perClient[id] = c.run(deadline) })
	}
	clients.Wait()
	close(stop)
	faults.Wait()
	r.h.took = time.Since(begin)
	for _, ops := range perClient {
		r.h.ops = append(r.h.ops, ops...)
	}
	for _, s := range spans {
		r.h.faults = append(r.h.faults, s...)
	}
	return &r.h
}

// inject runs f at f.Start and, if f.Every is set, again every f.Every,
// until stop closes.
func (r *recorder) inject(f Fault, begin time.Time, stop <-chan struct{}) []faultSpan {
	var spans []faultSpan
	for next := begin.Add(f.Start); ; next = next.Add(f.Every) {
		select {
		case <-stop:
			return spans
		case <-time.After(time.Until(next)):
		}
		span := faultSpan{name: f.Name, start: r.now()}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		span.err = f.Inject(ctx)
		cancel()
		span.end = r.now()
		spans = append(spans, span)
		if f.Every <= 0 || span.err != nil {
			return spans
		}
	}
}

// overtime reports whether a client past Config.Duration calls again:
// while the run lacks what Run checks it covered (an owner's lease that
// ended, and Config.Covered), within Config.CoverCalls calls. It counts
// the call.
func (r *recorder) overtime() bool {
	if r.ownerLeaseEnded() && (r.cfg.Covered == nil || r.cfg.Covered()) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h.overtime >= r.cfg.CoverCalls {
		return false
	}
	r.h.overtime++
	return true
}

// ownerLeaseEnded reports whether an owner's call has found its lease
// ended (see client.ended).
func (r *recorder) ownerLeaseEnded() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.h.ownerLeasesEnded > 0
}

func (r *recorder) now() int64 { return time.Now().UnixNano() - r.epoch }

// rel converts a store timestamp to the recording's time.
func (r *recorder) rel(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64 / 2 // no store timestamp is this early
	}
	return t.UnixNano() - r.epoch
}

// call runs one call and records it, unless it never reached the backend.
// do returns the call's output, without its outcome, and its error.
func (r *recorder) call(c *client, in input, do func(ctx context.Context) (output, error)) output {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.CallTimeout)
	in.call = r.now()
	out, err := do(ctx)
	out.ret = r.now()
	cancel()

	unsent := false
	switch {
	case err == nil:
		out.outcome = succeeded
	case errors.Is(err, stores.ErrLeaseLost) && in.kind != claimCall && in.kind != lookupCall:
		out.outcome = leaseLost
	case errors.Is(err, stores.ErrNotFound) && in.kind == lookupCall:
		out.outcome = notFound
	default:
		unsent = r.cfg.NotSent != nil && r.cfg.NotSent(err)
		out = output{outcome: unknown, ret: never, err: err.Error()}
		if !unsent && !errors.Is(err, stores.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
			r.unexpected(err)
		}
		// The backend is down or slow: give it a moment, as a worker's
		// retry policy would, rather than fill the history with failures.
		time.Sleep(r.cfg.MinLease/2 + c.upTo(r.cfg.MinLease/2))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if unsent {
		r.h.unsent++
		return out
	}
	r.h.outcomes[outcomeName(in, out)]++
	if in.kind == lookupCall && out.outcome == unknown {
		// A read of unknown outcome changed nothing and says nothing:
		// left out, it spares the check a call to place.
		return out
	}
	c.ops = append(c.ops, porcupine.Operation{
		ClientId: c.id, Input: in, Call: in.call, Output: out, Return: out.ret,
	})
	return out
}

// unexpected notes an error the contract does not name. r.mu need not be
// held.
func (r *recorder) unexpected(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.h.unexpected) < 5 {
		r.h.unexpected = append(r.h.unexpected, err.Error())
	}
}

// outcomeName names a call's method and outcome for the report, such as
// "claim acquired" or "complete lease lost".
func outcomeName(in input, out output) string {
	method := [...]string{claimCall: "claim", completeCall: "complete", releaseCall: "release",
		extendCall: "extend", lookupCall: "lookup"}[in.kind]
	switch out.outcome {
	case unknown:
		return method + " unknown"
	case leaseLost:
		return method + " lease lost"
	case notFound:
		return method + " not found"
	}
	if in.kind == claimCall || in.kind == lookupCall {
		return method + " " + out.status.String()
	}
	return method + " ok"
}
