package app

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/admin"
	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/problem"
)

// adminCall sends an admin request with the key and returns the status and
// the decoded record or problem.
func (r *running) adminCall(t *testing.T, method, path, apiKey string) (int, admin.Record, problem.Details) {
	t.Helper()
	req, err := http.NewRequest(method, r.ops+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
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

// Each operator of ADMIN_API_KEYS acts under their own name in the
// service's log, whatever X-Admin-Actor says; ADMIN_API_KEY still works,
// as the one operator "admin", and start-up says the log cannot tell its
// users apart.
func TestKeysAdminLogsTheKeysOperator(t *testing.T) {
	t.Parallel()
	const alice, bob = "alices-admin-key-0123", "bobs-admin-key-456789"
	for name, tc := range map[string]struct {
		env          []string
		key, actor   string
		startWarning bool
	}{
		"ADMIN_API_KEYS": {[]string{"ADMIN_API_KEYS=" + alice + ":alice," + bob + ":bob"}, bob, "bob", false},
		"ADMIN_API_KEY":  {[]string{"ADMIN_API_KEY=" + alice}, alice, "admin", true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			logs := &testenv.Buffer{}
			a := startAppLogging(t, seams{}, slog.New(slog.NewJSONHandler(logs, nil)), tc.env...)
			req, _ := http.NewRequest(http.MethodPost, a.ops+"/admin/keys/"+testdomain.ChargeRoute+"/evict?key=k-1", nil)
			req.Header.Set("Authorization", "Bearer "+tc.key)
			req.Header.Set("X-Admin-Actor", "security-team")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound { // no such record, past authentication
				t.Fatalf("evict: %d, want 404", resp.StatusCode)
			}
			log := logs.String()
			if !strings.Contains(log, `"action":"evict","actor":"`+tc.actor+`"`) || strings.Contains(log, "security-team") {
				t.Errorf("log:\n%s\nwant the evict's actor %q, and no X-Admin-Actor", log, tc.actor)
			}
			if warned := strings.Contains(log, `"msg":"ADMIN_API_KEY is one key for every operator`); warned != tc.startWarning {
				t.Errorf("start-up warned of ADMIN_API_KEY: %v, want %v", warned, tc.startWarning)
			}
		})
	}
}

// A source that keeps sending wrong admin keys is throttled: 429 with
// Retry-After, for its right key too, and counted apart.
func TestKeysAdminThrottlesWrongKeys(t *testing.T) {
	t.Parallel()
	a := startApp(t, "ADMIN_API_KEY=adm1n-0123456789ab")
	path := "/admin/keys/" + testdomain.ChargeRoute + "?key=k"
	for i := range admin.DefaultThrottleBurst {
		if code, _, _ := a.adminCall(t, "GET", path, "wrong-admin-key-0123"); code != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: %d, want 401", i+1, code)
		}
	}
	for _, key := range []string{"wrong-admin-key-0123", "adm1n-0123456789ab"} {
		code, _, d := a.adminCall(t, "GET", path, key)
		if code != http.StatusTooManyRequests || d.Status != code || !strings.Contains(d.Detail, "too many failed authentications") {
			t.Errorf("after %d wrong keys: %d %+v, want 429", admin.DefaultThrottleBurst, code, d)
		}
	}
	if n, m := a.Metric(t, "onceflow_admin_auth_failures_total"), a.Metric(t, "onceflow_admin_auth_throttled_total"); n != admin.DefaultThrottleBurst || m != 2 {
		t.Errorf("failures %v, throttled %v; want %d and 2", n, m, admin.DefaultThrottleBurst)
	}
}
