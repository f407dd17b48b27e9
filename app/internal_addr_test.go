package app

import (
	"context"
	"net/http"
	"testing"

	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
)

// With INTERNAL_ADDR set, /metrics, the probes and the key admin are
// served there and not on HTTP_ADDR, which serves the API only; the image's
// health check asks the internal port.
func TestInternalAddrKeepsOperationsOffThePublicPort(t *testing.T) {
	a := startApp(t, "INTERNAL_ADDR=127.0.0.1:0", "ADMIN_API_KEY=admin-key-of-32-characters-long!")
	if a.ops == a.base {
		t.Fatalf("the internal server listens on the public address %s", a.base)
	}
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/admin/keys/charge?key=k"} {
		if code := testenv.GetJSON(t, a.base+path, nil); code != http.StatusNotFound {
			t.Errorf("GET %s on HTTP_ADDR: %d, want 404", path, code)
		}
	}
	for path, want := range map[string]int{
		"/metrics": http.StatusOK, "/healthz": http.StatusOK, "/readyz": http.StatusOK,
		"/admin/keys/charge?key=k": http.StatusUnauthorized, // there, behind its key
		"/v1/charges/r-1":          http.StatusNotFound,     // the API is not
	} {
		if code := testenv.GetJSON(t, a.ops+path, nil); code != want {
			t.Errorf("GET %s on INTERNAL_ADDR: %d, want %d", path, code, want)
		}
	}
	if code := a.Post(t, flowtest.CreatePath, flowtest.Body("r-internal-1")); code != http.StatusAccepted {
		t.Errorf("POST %s on HTTP_ADDR: %d, want 202", flowtest.CreatePath, code)
	}

	env := []string{"HTTP_ADDR=" + a.Addr(), "INTERNAL_ADDR=" + a.InternalAddr()}
	if err := Healthcheck(context.Background(), env); err != nil {
		t.Errorf("healthcheck with INTERNAL_ADDR: %v", err)
	}
	if err := Healthcheck(context.Background(), env[:1]); err == nil {
		t.Error("healthcheck of HTTP_ADDR alone passed: it has no /readyz when INTERNAL_ADDR is set")
	}
}
