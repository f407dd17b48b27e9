package app

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/signing"
	"github.com/onceflow/onceflow/transport"
)

// With MESSAGE_SIGNING_SECRETS a producer without the secret cannot
// pre-empt a request's key: its message is poisoned before anything is
// claimed. What the service's own producers send is signed and handled: a
// request posted to the API, requests a trusted producer publishes
// (OpenProducer, as a domain's commands do), and the events the routes
// produce, published by the router in lease mode and by the outbox's relay
// in transaction mode. On Redis Streams, a broker that other processes
// publish to and that keeps every copy it is sent.
func TestSignedMessagesOnly(t *testing.T) {
	if !builtIn(transport.RedisStream) {
		t.Skip("the build has no redisstream transport")
	}
	for _, mode := range []string{"lease", "transaction"} {
		t.Run(mode, func(t *testing.T) {
			env := append(serviceEnv(t, transport.RedisStream), "MESSAGE_SIGNING_SECRETS=a-secret-of-32-characters-or-more,"+testenv.NewID()+testenv.NewID())
			if mode == "transaction" {
				env = append(env, "STORE=postgres", "DATABASE_URL="+testenv.PostgresSchema(t), "DEDUP_MODE=transaction")
			}
			a := startApp(t, env...)

			forged := testdomain.Event{ID: "signed-0", Amount: 1}.Message()
			if err := a.transport.Publisher().Publish(testdomain.TopicRequested, forged); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the unsigned message poisoned", func() bool {
				return a.Metric(t, "onceflow_poisoned_messages_total", "topic", testdomain.TopicRequested) == 1
			})

			flowtest.PostOK(t, a, "signed-0")
			producer, err := OpenProducer(t.Context(), a.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer producer.Close()
			flowtest.PublishPlain(t, producer, testdomain.TopicRequested, 2, 1)

			const want = 3
			waitFor(t, "3 requests charged, noticed and receipted", func() bool {
				got := flowtest.Tally(t, a)
				return got.Charges.Rows == want && got.Notices.Rows == want && got.Receipts.Rows == want
			})
			if n := a.Metric(t, "onceflow_receiver_outcomes_total", "scope", testdomain.ChargeRoute); n != want {
				t.Errorf("the charge route's receiver saw %v messages, want the %d signed ones only", n, want)
			}
			if n := a.Metric(t, "onceflow_poisoned_messages_total"); n != 1 {
				t.Errorf("%v messages poisoned, want the unsigned one only: every event the service produced verifies", n)
			}
		})
	}
}

// A signature holds on the topic as it is on the broker, prefix included:
// a request that staging (TOPIC_PREFIX srvstg.) signed, copied entry for
// entry from staging's stream to prod's (srvprd.) by someone who can
// publish there, is poisoned in prod although both hold one secret, and
// prod's own request with the same id is then charged, not refused as a
// reused key.
func TestSignatureBindsTheBrokerTopic(t *testing.T) {
	if !builtIn(transport.RedisStream) {
		t.Skip("the build has no redisstream transport")
	}
	env := serviceEnv(t, transport.RedisStream)
	prefix := envValue(env, "TOPIC_PREFIX") // unique to the test: both environments' streams are deleted with it
	var log testenv.Buffer
	a := startAppLogging(t, seams{}, teeLogger(t, &log), append(env, "TOPIC_PREFIX="+prefix+"srvprd.", "MESSAGE_SIGNING_SECRETS="+sharedSecret)...)
	staging := a.cfg
	staging.TopicPrefix = prefix + "srvstg."

	producer, err := OpenProducer(t.Context(), staging, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	const id = "replayed-0"
	if err := producer.Publish(testdomain.TopicRequested, testdomain.Event{ID: id, Amount: 1}.Message()); err != nil {
		t.Fatal(err)
	}
	rdb := testenv.Redis(t)
	captured, err := rdb.XRange(t.Context(), staging.TopicPrefix+testdomain.TopicRequested, "-", "+").Result()
	if err != nil || len(captured) != 1 {
		t.Fatalf("staging's stream holds %d entries (%v), want the one published", len(captured), err)
	}
	replay := &redis.XAddArgs{Stream: a.cfg.TopicPrefix + testdomain.TopicRequested, Values: captured[0].Values}
	if err := rdb.XAdd(t.Context(), replay).Err(); err != nil {
		t.Fatal(err)
	}
	flowtest.PostOK(t, a, id) // prod's own request: amount 1250, another payload under the same key

	reason := `on topic \"` + a.cfg.TopicPrefix + testdomain.TopicRequested + `\": bad_signature`
	waitOnePoisoned(t, a, &log, 1, "prod's own alone: staging's was claimed")
	if n := flowtest.Outcomes(t, a, testdomain.ChargeRoute, "processed"); n != 1 {
		t.Errorf("the charge route processed %v messages, want prod's own", n)
	}
	if !strings.Contains(log.String(), reason) {
		t.Errorf("no poisoned message's reason says %s: %s", reason, log.String())
	}
}

// A signature holds for MESSAGE_SIGNING_MAX_AGE, under any of the secrets:
// while a rotation is under way (two secrets), a request signed with the
// old secret and one signed with the new are charged, and one signed
// twenty minutes ago, past a max age of fifteen, is poisoned before it is
// claimed, saying so. The stale one's producer runs on a clock twenty
// minutes behind: nothing waits.
func TestSignatureAgeAndRotation(t *testing.T) {
	if !builtIn(transport.RedisStream) {
		t.Skip("the build has no redisstream transport")
	}
	const newSecret = "b-secret-of-32-characters-or-more"
	var log testenv.Buffer
	a := startAppLogging(t, seams{}, teeLogger(t, &log), append(serviceEnv(t, transport.RedisStream),
		"MESSAGE_SIGNING_SECRETS="+newSecret+","+sharedSecret, "MESSAGE_SIGNING_MAX_AGE=15m")...)

	stale, err := signing.NewSigner(signing.Config{
		Secrets:     [][]byte{[]byte(newSecret)},
		TopicPrefix: a.cfg.TopicPrefix,
		Now:         func() time.Time { return time.Now().Add(-20 * time.Minute) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := stale.Publisher(a.transport.Publisher()).Publish(testdomain.TopicRequested, testdomain.Event{ID: "stale-0", Amount: 1}.Message()); err != nil {
		t.Fatal(err)
	}
	oldOnly := a.cfg
	oldOnly.MessageSigningSecrets = sharedSecret // a producer not yet given the new secret
	for id, cfg := range map[string]Config{"fresh-0": a.cfg, "old-secret-0": oldOnly} {
		producer, err := OpenProducer(t.Context(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer producer.Close()
		if err := producer.Publish(testdomain.TopicRequested, testdomain.Event{ID: id, Amount: 1}.Message()); err != nil {
			t.Fatal(err)
		}
	}

	waitOnePoisoned(t, a, &log, 2, "the fresh one and the old secret's")
	if got := log.String(); !strings.Contains(got, "signature expired: signed 20m") || !strings.Contains(got, "max age 15m0s") {
		t.Errorf("no poisoned message's reason says its signature expired, 20m old for a max age of 15m: %s", got)
	}
}

// MESSAGE_SIGNING_MAX_AGE is DEDUP_TTL unless set, and may not exceed it:
// a copy of a message older than the dedup window would run again.
func TestConfigMessageSigningMaxAge(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want time.Duration
		err  string
	}{
		{env: nil, want: 24 * time.Hour},
		{env: []string{"DEDUP_TTL=1h"}, want: time.Hour},
		{env: []string{"MESSAGE_SIGNING_MAX_AGE=15m"}, want: 15 * time.Minute},
		{env: []string{"MESSAGE_SIGNING_MAX_AGE=1h", "DEDUP_TTL=1h"}, want: time.Hour},
		{env: []string{"MESSAGE_SIGNING_MAX_AGE=-1m"}, err: "MESSAGE_SIGNING_MAX_AGE=-1m0s must be a positive duration up to DEDUP_TTL=24h0m0s, such as 15m, or 0 for DEDUP_TTL"},
		{env: []string{"MESSAGE_SIGNING_MAX_AGE=2h", "DEDUP_TTL=1h"}, err: "MESSAGE_SIGNING_MAX_AGE=2h0m0s must be at most DEDUP_TTL=1h0m0s"},
		{env: []string{"MESSAGE_SIGNING_MAX_AGE=soon"}, err: "MESSAGE_SIGNING_MAX_AGE: unable to parse duration"},
	} {
		cfg, err := LoadConfig(tc.env)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("LoadConfig(%q): %v, want an error saying %q", tc.env, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("LoadConfig(%q): %v", tc.env, err)
		case tc.err == "" && (cfg.MessageSigningMaxAge != tc.want || cfg.signingMaxAge() != tc.want):
			t.Errorf("LoadConfig(%q): max age %v (applied: %v), want %v", tc.env, cfg.MessageSigningMaxAge, cfg.signingMaxAge(), tc.want)
		}
	}
	if got := (Config{DedupTTL: time.Hour}).signingMaxAge(); got != time.Hour {
		t.Errorf("a Config not loaded, MESSAGE_SIGNING_MAX_AGE unset: max age %v, want DEDUP_TTL's 1h", got)
	}
}

// sharedSecret is a MESSAGE_SIGNING_SECRETS of one secret.
const sharedSecret = "a-secret-of-32-characters-or-more"

// envValue is the value of the variable name in environ, the last one set.
func envValue(environ []string, name string) string {
	var v string
	for _, kv := range environ {
		if val, ok := strings.CutPrefix(kv, name+"="); ok {
			v = val
		}
	}
	return v
}

// teeLogger logs warnings and errors to t.Log and to w.
func teeLogger(t testing.TB, w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, w), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// waitOnePoisoned waits until one request of a has been poisoned, and
// logged so, and charged ones have been charged, noticed and receipted;
// then it checks that the charge route's receiver saw the charged ones
// alone, which are want.
func waitOnePoisoned(t *testing.T, a *running, log *testenv.Buffer, charged int64, want string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("one request poisoned and %d charged, noticed and receipted", charged), func() bool {
		got := flowtest.Tally(t, a)
		return a.Metric(t, "onceflow_poisoned_messages_total", "topic", testdomain.TopicRequested) == 1 &&
			got.Charges.Rows == charged && got.Notices.Rows == charged && got.Receipts.Rows == charged &&
			strings.Contains(log.String(), "message poisoned")
	})
	if n := a.Metric(t, "onceflow_receiver_outcomes_total", "scope", testdomain.ChargeRoute); n != float64(charged) {
		t.Errorf("the charge route's receiver saw %v messages, want %s", n, want)
	}
}
