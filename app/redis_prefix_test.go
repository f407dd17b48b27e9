package app

import (
	"net/http"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
)

// Two environments sharing one Redis (TOPIC_PREFIX staging. and prod.)
// keep their records apart: the same client sending the same
// Idempotency-Key and body to each gets each one's own answer, never the
// other's replayed. The records' prefix used to be onceflow:idem:
// whatever the environment.
func TestEnvironmentsSharingRedisKeepTheirRecordsApart(t *testing.T) {
	testenv.Redis(t)
	run := testenv.NewID()[:8]
	shared := []string{"STORE=redis", "REDIS_URL=redis://" + testenv.RedisAddr() + "/0",
		"SERVICE_NAME=prefix-" + run, "API_KEYS=key-of-client-a-0123456789:client-a"}
	staging := startApp(t, append(shared, "TOPIC_PREFIX=staging.")...)
	prod := startApp(t, append(shared, "TOPIC_PREFIX=prod.")...)

	key, body := "order-"+run, flowtest.Body("req-"+run)
	for name, a := range map[string]*running{"staging": staging, "prod": prod} {
		req, err := http.NewRequest(http.MethodPost, a.base+flowtest.CreatePath, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer key-of-client-a-0123456789")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("%s: %d, Idempotent-Replayed %q; want 202 of its own", name, resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
		}
	}
}
