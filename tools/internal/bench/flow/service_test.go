package flow

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
)

// serviceOptions are small rounds of the service on kind, on the services
// of the test environment.
func serviceOptions(t testing.TB, kind string) ServiceOptions {
	testenv.Integration(t)
	testenv.Postgres(t) // skips when PostgreSQL is unreachable
	testenv.Redis(t)
	o := ServiceOptions{Kind: kind, PostgresURL: testenv.PostgresURL(), RedisAddr: testenv.RedisAddr(), Requests: 100}
	switch kind {
	case "kafka":
		o.KafkaBrokers = brokerenv.Kafka(t)
	case "amqp":
		o.AMQPURL = brokerenv.AMQP(t)
	case "nats":
		o.NATSURL = brokerenv.NATS(t)
	case "redisstream":
		o.RedisStreamURL = "redis://" + testenv.RedisAddr() + "/0"
	}
	return o
}

// TestServiceRounds runs the service at two concurrencies and the plain
// consumer on every broker: each round moves every request through (its
// ledger checked by the round), and the service's rounds report how full
// its record store's claim batches ran.
func TestServiceRounds(t *testing.T) {
	for _, kind := range ServiceKinds {
		t.Run(kind, func(t *testing.T) {
			o := serviceOptions(t, kind)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			b, err := NewServiceBench(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := b.Close(); err != nil {
					t.Error(err)
				}
			}()
			for _, concurrency := range []int{DefaultInFlight, 1} {
				r, err := b.Round(ctx, concurrency)
				if err != nil {
					t.Fatalf("concurrency %d: %v", concurrency, err)
				}
				t.Logf("%s, concurrency %d: %.0f requests/s, %.1f claims per batch, cores %.0f%% busy", kind, concurrency, r.Rate, r.ClaimsPerBatch, 100*r.Busy)
				if r.Rate <= 0 || r.Lanes != concurrency || !(r.ClaimsPerBatch >= 1) {
					t.Errorf("concurrency %d: %+v", concurrency, r)
				}
			}
			r, err := b.PlainRound(ctx)
			if err != nil {
				t.Fatalf("plain: %v", err)
			}
			t.Logf("%s, plain: %.0f msg/s", kind, r.Rate)
			if r.Rate <= 0 || !math.IsNaN(r.ClaimsPerBatch) {
				t.Errorf("plain: %+v", r)
			}
		})
	}
}

// TestServiceOptionsRejectIncomplete checks that a service bench missing
// what its broker needs is refused before it touches a service.
func TestServiceOptionsRejectIncomplete(t *testing.T) {
	ctx := context.Background()
	full := ServiceOptions{PostgresURL: "postgres://x", RedisAddr: "x:6379"}
	for name, o := range map[string]ServiceOptions{
		"gochannel":               {Kind: "gochannel", PostgresURL: full.PostgresURL, RedisAddr: full.RedisAddr},
		"amqp without URL":        {Kind: "amqp", PostgresURL: full.PostgresURL, RedisAddr: full.RedisAddr},
		"nats without URL":        {Kind: "nats", PostgresURL: full.PostgresURL, RedisAddr: full.RedisAddr},
		"redisstream without URL": {Kind: "redisstream", PostgresURL: full.PostgresURL, RedisAddr: full.RedisAddr},
		"no PostgreSQL":           {Kind: "kafka", RedisAddr: full.RedisAddr},
		"no Redis":                {Kind: "kafka", PostgresURL: full.PostgresURL},
		"negative requests":       {Kind: "kafka", PostgresURL: full.PostgresURL, RedisAddr: full.RedisAddr, Requests: -1},
	} {
		if _, err := NewServiceBench(ctx, o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
