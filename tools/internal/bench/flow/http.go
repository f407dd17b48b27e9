package flow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/memory"
)

// Variant is what stands in front of the handler of
// testdomain.CreatePattern in an HTTP round.
type Variant string

const (
	// NoMiddleware serves POST /v1/charges with no Idempotency-Key
	// middleware.
	NoMiddleware Variant = "none"
	// MemoryStore puts the middleware in front, on the memory store.
	MemoryStore Variant = "memory"
	// RedisStore puts the middleware in front, on the Redis store as the
	// service sets it up by default (batched, behind the local cache).
	RedisStore Variant = "redis"
)

// Defaults of [HTTPOptions].
const (
	DefaultRequests = 5000
	DefaultClients  = 16
)

// HTTPOptions configures an [HTTPBench]. Zero sizes take the defaults.
type HTTPOptions struct {
	// Redis keeps the records of the RedisStore variant; the bench does
	// not close it. Required by that variant only.
	Redis redis.UniversalClient
	// Requests is the number of measured requests per round. Default
	// DefaultRequests.
	Requests int
	// Clients is the number of concurrent workers sending them, each on
	// a keep-alive connection of its own. Default DefaultClients.
	Clients int
	// Logger receives the middleware's warnings; nil discards them.
	Logger *slog.Logger
}

// HTTPBench measures the latency of POST /v1/charges
// (testdomain.CreatePattern) served by the test domain's API over a
// loopback connection, with and without the Idempotency-Key middleware.
// The ledger is the in-memory one and publishing is discarded, so that the
// figure is the handler's and the middleware's cost, not the broker's.
// Every request carries a fresh key and request id.
type HTTPBench struct {
	opts      HTTPOptions
	keyPrefix string
}

// NewHTTPBench checks opts and fills its defaults.
func NewHTTPBench(_ context.Context, opts HTTPOptions) (*HTTPBench, error) {
	if opts.Requests == 0 {
		opts.Requests = DefaultRequests
	}
	if opts.Clients == 0 {
		opts.Clients = DefaultClients
	}
	if opts.Requests < 0 || opts.Clients < 0 {
		return nil, errors.New("requests and clients must be positive")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &HTTPBench{opts: opts, keyPrefix: "bench:http:" + shortID() + ":"}, nil
}

// Round serves a fresh handler of variant v, sends Requests requests from
// Clients workers, and returns the latency at percentile (0 to 100) in
// microseconds. It fails if a response is not 2xx.
func (b *HTTPBench) Round(ctx context.Context, v Variant, percentile float64) (float64, error) {
	ps, err := b.RoundPercentiles(ctx, v, percentile)
	if err != nil {
		return 0, err
	}
	return ps[0], nil
}

// RoundPercentiles is Round returning several percentiles of one round.
func (b *HTTPBench) RoundPercentiles(ctx context.Context, v Variant, percentiles ...float64) ([]float64, error) {
	h, stop, err := b.handler(v)
	if err != nil {
		return nil, err
	}
	defer stop()
	hist, err := load(ctx, h, b.opts.Requests, b.opts.Clients, shortID())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v, err)
	}
	out := make([]float64, len(percentiles))
	for i, p := range percentiles {
		out[i] = float64(hist.ValueAtQuantile(p))
	}
	return out, nil
}

// Close releases nothing today; the Redis records expire on their own
// (recordTTL). It is there so that every bench closes alike.
func (b *HTTPBench) Close() error { return nil }

// handler is the domain's /v1 API as app serves it, with variant v in
// front of POST /v1/charges, on a fresh ledger and store; stop releases
// them.
func (b *HTTPBench) handler(v Variant) (http.Handler, func(), error) {
	api := testdomain.API(testdomain.NewMemoryLedger(), discardPublisher{}, b.opts.Logger)
	v1 := http.NewServeMux()
	var store stores.Store
	stop := func() {}
	switch v {
	case NoMiddleware:
	case MemoryStore:
		m := memory.New(memory.Config{})
		store, stop = m, func() { _ = m.Close() }
	case RedisStore:
		if b.opts.Redis == nil {
			return nil, nil, errors.New("the redis variant needs a Redis client")
		}
		var err error
		if store, err = serviceStore(b.opts.Redis, b.keyPrefix, nil); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, fmt.Errorf("unknown variant %q: use %s, %s or %s", v, NoMiddleware, MemoryStore, RedisStore)
	}
	if store == nil {
		api.Register(v1, func(h http.Handler) http.Handler { return h })
	} else {
		rec, err := receiver.New(receiver.Config{Store: store, TTL: recordTTL, Logger: b.opts.Logger})
		if err != nil {
			stop()
			return nil, nil, err
		}
		// No authentication: every request of the bench is one anonymous
		// client's, sent faster than the service's default quota allows,
		// so the quota never refuses.
		api.Register(v1, idempotencykey.Middleware(rec, idempotencykey.WithMaxRequestBody(testdomain.MaxRequestBody), idempotencykey.WithAnonymous(),
			idempotencykey.WithClientQuota(math.MaxInt32, time.Second)))
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", v1)
	return mux, stop, nil
}

// discardPublisher accepts every message and keeps none.
type discardPublisher struct{}

func (discardPublisher) Publish(string, ...*message.Message) error { return nil }
