package app

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/admin"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/problem"
)

// adminCall sends an admin request with the key and an actor and returns the
// status and the decoded record or problem.
func (r *running) adminCall(t *testing.T, method, path, apiKey string) (int, admin.Record, problem.Details) {
	t.Helper()
	req, err := http.NewRequest(method, r.ops+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set(admin.ActorHeader, "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var rec admin.Record
	var d problem.Details
	if resp.StatusCode == http.StatusOK {
		err = json.Unmarshal(body, &rec)
	} else if resp.Header.Get("Content-Type") == problem.ContentType {
		err = json.Unmarshal(body, &d)
	}
	if err != nil {
		t.Fatalf("%s %s: %d %q: %v", method, path, resp.StatusCode, body, err)
	}
	return resp.StatusCode, rec, d
}

// The key admin reads and evicts a handler's record on the service's own
// store, PostgreSQL through the local cache of completed records, and the
// next copy of the message is processed again: the cache dropped the key.
// (cmd/onceflow's TestKeys does the same on the memory store.)
func TestKeysAdminEvictsThroughTheService(t *testing.T) {
	for _, name := range []string{"postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, append(storeEnvs(t)[name](t), "ADMIN_API_KEY=adm1n-0123456789ab")...)
			if !a.cfg.cached() {
				t.Fatal("the store has no local cache")
			}
			id := "req-" + uuid.NewString()[:8]
			path := "/admin/keys/" + testdomain.ChargeRoute + "?key=" + id
			processed := func() float64 {
				return flowtest.Outcomes(t, a, testdomain.ChargeRoute, "processed")
			}
			flowtest.PostOK(t, a, id)
			waitFor(t, "the charge", func() bool {
				code, rec, _ := a.adminCall(t, "GET", path, "adm1n-0123456789ab")
				return code == http.StatusOK && rec.State == "completed"
			})
			if code, _, d := a.adminCall(t, "GET", path, "wrong"); code != http.StatusUnauthorized || d.Status != code {
				t.Fatalf("a wrong admin key got %d %+v, want 401", code, d)
			}
			if code, rec, _ := a.adminCall(t, "POST", "/admin/keys/"+testdomain.ChargeRoute+"/evict?key="+id, "adm1n-0123456789ab"); code != http.StatusOK || rec.Key != id {
				t.Fatalf("evict: %d %+v", code, rec)
			}
			if code, _, d := a.adminCall(t, "GET", path, "adm1n-0123456789ab"); code != http.StatusNotFound || d.Status != code {
				t.Fatalf("after the evict: %d %+v, want 404", code, d)
			}
			before := processed()
			// Another request (its own Idempotency-Key) publishes the same
			// request's event: its message is processed again, not a
			// duplicate.
			flowtest.PostOK(t, a, id)
			waitFor(t, "the second charge", func() bool { return processed() == before+1 })
		})
	}
}

// Without ADMIN_API_KEY the admin routes do not exist.
func TestKeysAdminOffByDefault(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	if code, _, _ := a.adminCall(t, "GET", "/admin/keys/"+testdomain.ChargeRoute+"?key=k", ""); code != http.StatusNotFound {
		t.Fatalf("GET /admin/keys/... without ADMIN_API_KEY: %d, want 404", code)
	}
}

// A request to the key admin with a wrong key is refused and counted on
// /metrics.
func TestKeysAdminCountsRefusedKeys(t *testing.T) {
	t.Parallel()
	a := startApp(t, "ADMIN_API_KEY=adm1n-0123456789ab")
	path := "/admin/keys/" + testdomain.ChargeRoute + "?key=k"
	for _, key := range []string{"adm1n", "adm1n-0123456789ab-not"} {
		if code, _, _ := a.adminCall(t, "GET", path, key); code != http.StatusUnauthorized {
			t.Fatalf("GET %s with a wrong key: %d, want 401", path, code)
		}
	}
	if n := a.Metric(t, "onceflow_admin_auth_failures_total"); n != 2 {
		t.Errorf("onceflow_admin_auth_failures_total = %v, want 2", n)
	}
}
