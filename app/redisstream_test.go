package app

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/internal/testenv"
)

// The service on Redis Streams: a payment sent three times is charged and
// notified once.
func TestRedisStreamAppChargesOnce(t *testing.T) {
	env, _ := redisStreamAppEnv(t)
	a := startApp(t, env...)
	postThriceChargesOnce(t, a, "pay-redisstream-1")
}

// Two replicas of the service are consumers of each handler's group:
// copies of a payment reach both at once, a copy whose original is still in
// progress on the other replica is nacked and handed out again, and each
// payment is charged and notified once across the two. RETRY_MAX=0 sends a
// copy found in progress back at once instead of retrying it in process.
func TestRedisStreamReplicasChargeOnce(t *testing.T) {
	env, _ := redisStreamAppEnv(t)
	replicasChargeOnce(t, env, 3, "processed", "duplicate")
}

// A producer built from watermill-redisstream alone, with its default
// publisher configuration, feeds the service: the message contract of
// docs/brokers.md.
func TestRedisStreamPlainWatermillProducer(t *testing.T) {
	env, prefix := redisStreamAppEnv(t)
	a := startApp(t, env...)

	pub, err := redisstream.NewPublisher(redisstream.PublisherConfig{
		Client: redis.NewClient(&redis.Options{Addr: testenv.RedisAddr()}),
	}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	plainProducerChargesOnce(t, a, pub, prefix+"payments.requested")
}

// A malformed message is parked in the poison stream, and the handler goes
// on with the next one.
func TestRedisStreamMalformedMessageIsPoisoned(t *testing.T) {
	env, _ := redisStreamAppEnv(t)
	a := startApp(t, env...)
	malformedIsPoisoned(t, a, "not json")
}

// In transaction mode each payment's events go through the outbox, whose
// relay publishes them to the streams: a payment sent three times is
// charged, notified and given a receipt once. A duplicate replays no
// event (the original's committed with its record), so the routes of
// payments.charged see one message where those of payments.requested see
// three.
func TestRedisStreamTransactionModeChargesOnce(t *testing.T) {
	env, _ := redisStreamAppEnv(t)
	env = append(env, "STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t), "DEDUP_MODE=transaction")
	a := startApp(t, env...)
	for range 3 {
		if code := a.post(t, "/v1/payments", paymentBody("pay-redisstream-tx")); code != http.StatusAccepted {
			t.Fatalf("POST: status %d", code)
		}
	}
	waitFor(t, "every copy handled", func() bool {
		for _, r := range paymentRoutes() {
			processed := a.metric(t, "onceflow_receiver_outcomes_total", "scope", r.Name, "outcome", "processed")
			duplicates := a.metric(t, "onceflow_receiver_outcomes_total", "scope", r.Name, "outcome", "duplicate")
			wantDuplicates := 0.0
			if r.Consumes == handlers.TopicPaymentRequested {
				wantDuplicates = 2
			}
			if processed != 1 || duplicates != wantDuplicates {
				return false
			}
		}
		return true
	})
	if got, want := a.summary(t), (summary{1, 1, 1}); got != want {
		t.Errorf("summary = %+v, want %+v", got, want)
	}
	if got := a.receipts(t); got != 1 {
		t.Errorf("ledger holds %d receipts, want 1", got)
	}
}

// Start-up against a Redis that does not answer fails at once with one
// line naming the variable the URL came from, without its password; with
// REDIS_STREAM_URL unset the transport uses REDIS_URL.
func TestRedisStreamStartup(t *testing.T) {
	testenv.Integration(t)
	closed := testenv.ClosedAddr(t)
	for name, c := range map[string]struct{ env, want string }{
		"REDIS_STREAM_URL": {"REDIS_STREAM_URL=redis://:s3cret@" + closed + "/0", "REDIS_STREAM_URL=redis://:xxxxx@" + closed + "/0: "},
		"REDIS_URL":        {"REDIS_URL=redis://:s3cret@" + closed + "/0", "REDIS_URL=redis://:xxxxx@" + closed + "/0: "},
	} {
		t.Run(name+" unreachable", func(t *testing.T) {
			startupFails(t, []string{"TRANSPORT=redisstream", c.env}, c.want, "s3cret", 3*time.Second)
		})
	}

	t.Run("REDIS_URL when REDIS_STREAM_URL is unset", func(t *testing.T) {
		env, prefix := redisStreamAppEnv(t)
		for i, e := range env {
			if strings.HasPrefix(e, "REDIS_STREAM_URL=") {
				env[i] = "REDIS_URL=" + strings.TrimPrefix(e, "REDIS_STREAM_URL=")
			}
		}
		a := startApp(t, env...)
		postThriceChargesOnce(t, a, "pay-redisstream-fallback")
		if n := redisStreamTestClient(t).XLen(t.Context(), prefix+handlers.TopicPaymentRequested).Val(); n != 3 {
			t.Errorf("stream %s on REDIS_URL holds %d entries, want the 3 copies", prefix+handlers.TopicPaymentRequested, n)
		}
	})
}

// redisStreamAppEnv is the environment of an App on the test Redis with
// streams and consumer groups of its own, deleted when the test ends.
func redisStreamAppEnv(t *testing.T) (env []string, prefix string) {
	t.Helper()
	prefix, service := testenv.Names()
	testenv.DeleteRedisKeysOnCleanup(t, redisStreamTestClient(t), prefix)
	return []string{"TRANSPORT=redisstream", "REDIS_STREAM_URL=redis://" + testenv.RedisAddr() + "/0", "STORE=memory",
		"TOPIC_PREFIX=" + prefix, "SERVICE_NAME=" + service}, prefix
}

// redisStreamTestClient is a client of the test Redis, database 0, closed
// when t ends.
func redisStreamTestClient(t *testing.T) *redis.Client {
	t.Helper()
	return testenv.Redis(t)
}
