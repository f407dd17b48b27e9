package redisstream_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/app/apptest"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport"
)

// serviceEnv is the environment of a service of the test domain on the
// test Redis with streams and consumer groups of its own, deleted when
// the test ends.
func serviceEnv(t *testing.T) []string {
	t.Helper()
	return brokerenv.ServiceEnv(t, transport.RedisStream, nil)
}

// The service on Redis Streams: a request sent three times is charged,
// noticed and receipted once.
func TestRedisStreamAppChargesOnce(t *testing.T) {
	s := apptest.Start(t, testdomain.Domain(), serviceEnv(t)...)
	flowtest.PostThriceChargesOnce(t, s, "req-redisstream-1")
}

// Two replicas of the service are consumers of each route's group: copies
// of a request reach both at once, a copy whose original is still in
// progress on the other replica is nacked and handed out again, and each
// request is charged, noticed and receipted once across the two.
// RETRY_MAX=0 sends a copy found in progress back at once instead of
// retrying it in process.
func TestRedisStreamReplicasChargeOnce(t *testing.T) {
	flowtest.ReplicasChargeOnce(t, apptest.Start, serviceEnv(t), 3, "processed", "duplicate")
}

// A producer built from watermill-redisstream alone, with its default
// publisher configuration, feeds the service: the message contract of
// docs/brokers.md.
func TestRedisStreamPlainWatermillProducer(t *testing.T) {
	env := serviceEnv(t)
	s := apptest.Start(t, testdomain.Domain(), env...)

	pub, err := redisstream.NewPublisher(redisstream.PublisherConfig{
		Client: redis.NewClient(&redis.Options{Addr: testenv.RedisAddr()}),
	}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	flowtest.PlainProducerChargesOnce(t, s, pub, testenv.Setting(env, "TOPIC_PREFIX")+testdomain.TopicRequested)
}

// A malformed message is parked in the poison stream, and the route goes
// on with the next one.
func TestRedisStreamMalformedMessageIsPoisoned(t *testing.T) {
	s := apptest.Start(t, testdomain.Domain(), serviceEnv(t)...)
	flowtest.MalformedIsPoisoned(t, s, s.Producer(t), "not json")
}

// In transaction mode each request's events go through the outbox, whose
// relay publishes them to the streams: a request sent three times is
// charged, noticed and receipted once. A duplicate replays no event (the
// original's committed with its record), so the routes of the charged
// topic see one message where the charge route sees three.
func TestRedisStreamTransactionModeChargesOnce(t *testing.T) {
	env := append(serviceEnv(t), "STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t), "DEDUP_MODE=transaction")
	s := apptest.Start(t, testdomain.Domain(), env...)
	for range 3 {
		flowtest.PostOK(t, s, "req-redisstream-tx")
	}
	testenv.WaitFor(t, flowtest.Wait, "every copy handled", func() bool {
		for _, r := range testdomain.Routes() {
			processed := flowtest.Outcomes(t, s, r.Name, "processed")
			duplicates := flowtest.Outcomes(t, s, r.Name, "duplicate")
			wantDuplicates := 0.0
			if r.Consumes == testdomain.TopicRequested {
				wantDuplicates = 2
			}
			if processed != 1 || duplicates != wantDuplicates {
				return false
			}
		}
		return true
	})
	if got, want := flowtest.Tally(t, s), flowtest.Want(1, 3); got != want {
		t.Errorf("tally = %+v, want %+v", got, want)
	}
}

// The service's start-up against a Redis that does not answer fails at
// once with one line naming the variable the URL came from, without its
// password; with REDIS_STREAM_URL unset the transport uses REDIS_URL.
func TestRedisStreamServiceStartup(t *testing.T) {
	testenv.Integration(t)
	closed := testenv.ClosedAddr(t)
	for name, c := range map[string]struct{ env, want string }{
		"REDIS_STREAM_URL": {"REDIS_STREAM_URL=redis://:s3cret@" + closed + "/0", "REDIS_STREAM_URL=redis://:xxxxx@" + closed + "/0: "},
		"REDIS_URL":        {"REDIS_URL=redis://:s3cret@" + closed + "/0", "REDIS_URL=redis://:xxxxx@" + closed + "/0: "},
	} {
		t.Run(name+" unreachable", func(t *testing.T) {
			apptest.StartFails(t, testdomain.Domain(), []string{"TRANSPORT=redisstream", c.env}, c.want, "s3cret", 3*time.Second)
		})
	}

	t.Run("REDIS_URL when REDIS_STREAM_URL is unset", func(t *testing.T) {
		env := serviceEnv(t)
		prefix := testenv.Setting(env, "TOPIC_PREFIX")
		for i, e := range env {
			if v, ok := strings.CutPrefix(e, "REDIS_STREAM_URL="); ok {
				env[i] = "REDIS_URL=" + v
			}
		}
		s := apptest.Start(t, testdomain.Domain(), env...)
		flowtest.PostThriceChargesOnce(t, s, "req-redisstream-fallback")
		if n := testenv.Redis(t).XLen(t.Context(), prefix+testdomain.TopicRequested).Val(); n != 3 {
			t.Errorf("stream %s on REDIS_URL holds %d entries, want the 3 copies", prefix+testdomain.TopicRequested, n)
		}
	})
}
