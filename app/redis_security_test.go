package app

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
)

// The Redis store reaches a Redis that requires a password, over TLS on a
// CA of its own, as a single node (the URL's form: the password in it or in
// REDIS_PASSWORD, TLS by rediss://) and as a Cluster (REDIS_ADDRS with
// REDIS_PASSWORD, REDIS_TLS and REDIS_TLS_CA_FILE); records are kept there
// (a replay), and the wrong password fails start-up without showing it.
func TestRedisStoreAuthAndTLS(t *testing.T) {
	certs := testenv.TLS(t)
	const password = "redis-pa55-word"
	for _, tc := range []struct {
		name    string
		certs   *testenv.TLSFiles
		cluster bool
		environ func(s testenv.SecuredRedis, password string) []string
	}{
		{"node, password in REDIS_PASSWORD", nil, false, func(s testenv.SecuredRedis, pw string) []string {
			return []string{"REDIS_URL=" + s.URL(), "REDIS_PASSWORD=" + pw}
		}},
		{"node over TLS, password in the URL", &certs, false, func(s testenv.SecuredRedis, pw string) []string {
			return []string{"REDIS_URL=rediss://:" + pw + "@" + s.Addr + "/0", "REDIS_TLS_CA_FILE=" + certs.CAFile}
		}},
		{"cluster over TLS", &certs, true, func(s testenv.SecuredRedis, pw string) []string {
			return []string{"REDIS_ADDRS=" + s.Addr, "REDIS_PASSWORD=" + pw, "REDIS_TLS=true", "REDIS_TLS_CA_FILE=" + certs.CAFile}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := testenv.RedisSecured(t, password, tc.certs, tc.cluster)
			a := startApp(t, append([]string{"STORE=redis"}, tc.environ(s, password)...)...)
			key := "k-" + testenv.NewID()
			for i, want := range []bool{false, true} {
				r := a.send(t, http.DefaultClient, http.MethodPost, flowtest.CreatePath, flowtest.Body("req-"+key), "Idempotency-Key", key)
				if r.status != http.StatusAccepted || r.replayed() != want {
					t.Errorf("POST %d: status %d, replayed %t; want 202, replayed %t", i+1, r.status, r.replayed(), want)
				}
			}
			n, err := testRedisClient(t, s).DBSize(t.Context()).Result()
			if err != nil || n == 0 {
				t.Errorf("the secured Redis holds %d keys (%v), want the records", n, err)
			}

			startupFails(t, append([]string{"STORE=redis"}, tc.environ(s, "wrong-pa55")...), "Redis", "pa55", 15*time.Second)
		})
	}
}

// testRedisClient is a client of s, closed when t ends.
func testRedisClient(t *testing.T, s testenv.SecuredRedis) *redis.Client {
	c := redis.NewClient(s.Options())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestSecuritySettingsValidate: credentials come with their mechanism, a
// CA file with TLS, and a Redis URL and REDIS_* never say one thing twice.
func TestSecuritySettingsValidate(t *testing.T) {
	for _, tc := range []struct {
		environ []string
		want    string
	}{
		{[]string{"KAFKA_SASL_MECHANISM=SCRAM-SHA-512", "KAFKA_USERNAME=u", "KAFKA_PASSWORD=p", "KAFKA_TLS=true"}, ""},
		{[]string{"KAFKA_SASL_MECHANISM=SCRAM-SHA-256", "KAFKA_USERNAME=u"}, "KAFKA_SASL_MECHANISM=SCRAM-SHA-256 needs KAFKA_USERNAME and KAFKA_PASSWORD"},
		{[]string{"KAFKA_PASSWORD=p"}, "KAFKA_USERNAME and KAFKA_PASSWORD need KAFKA_SASL_MECHANISM"},
		{[]string{"KAFKA_SASL_MECHANISM=GSSAPI"}, `KAFKA_SASL_MECHANISM="GSSAPI" is not allowed`},
		{[]string{"KAFKA_TLS_CA_FILE=/ca.pem"}, "KAFKA_TLS_CA_FILE needs KAFKA_TLS=true"},
		{[]string{"REDIS_URL=rediss://cache:6380/0", "REDIS_PASSWORD=p", "REDIS_USERNAME=u", "REDIS_TLS_CA_FILE=/ca.pem"}, ""},
		{[]string{"REDIS_URL=redis://cache:6379/0", "REDIS_TLS=true"}, "use rediss://"},
		{[]string{"REDIS_URL=redis://cache:6379/0", "REDIS_TLS_CA_FILE=/ca.pem"}, "use rediss://"},
		{[]string{"REDIS_URL=redis://:s3cret@cache:6379/0", "REDIS_PASSWORD=p"}, "REDIS_PASSWORD and a password in REDIS_URL"},
		{[]string{"REDIS_URL=redis://u:s3cret@cache:6379/0", "REDIS_USERNAME=u"}, "REDIS_USERNAME and a user in REDIS_URL"},
		{[]string{"REDIS_ADDRS=a:1,b:2", "REDIS_TLS_CA_FILE=/ca.pem"}, "REDIS_TLS_CA_FILE needs REDIS_TLS=true"},
		{[]string{"REDIS_ADDRS=a:1,b:2", "REDIS_TLS=true", "REDIS_PASSWORD=p"}, ""},
	} {
		_, err := LoadConfig(tc.environ)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.environ, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: the error shows the password: %v", tc.environ, err)
		}
	}
}
