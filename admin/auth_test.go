package admin_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/onceflow/onceflow/admin"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores/memory"
)

// A request without the admin API key, or with a wrong one, is refused,
// logged with where it came from and counted; the one with the key is
// neither. The key never shows in the log.
func TestAdminLogsAndCountsRefusedKeys(t *testing.T) {
	t.Parallel()
	store := memory.New(memory.Config{})
	t.Cleanup(func() { _ = store.Close() })
	var logs testenv.Buffer
	var failures atomic.Int32
	svc, err := admin.New(admin.Config{Store: store, Handlers: []string{"charge"},
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)), OnAuthFailure: func() { failures.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	h, err := svc.Handler(adminKey)
	if err != nil {
		t.Fatal(err)
	}
	call := func(authorization string) int {
		req := httptest.NewRequest(http.MethodGet, "/admin/keys/charge?key=pay-1", nil)
		req.RemoteAddr = "192.0.2.7:51234"
		req.Header.Set(admin.ActorHeader, "mallory")
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, auth := range []string{"", "Bearer guess-" + adminKey, "Basic " + adminKey} {
		if code := call(auth); code != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d, want 401", auth, code)
		}
	}
	if code := call("Bearer " + adminKey); code != http.StatusNotFound { // no such record: past authentication
		t.Errorf("with the key: %d, want 404", code)
	}
	if n := failures.Load(); n != 3 {
		t.Errorf("%d failures counted, want 3", n)
	}
	log := logs.String()
	if n := strings.Count(log, `"msg":"admin authentication refused"`); n != 3 || !strings.Contains(log, "192.0.2.7:51234") || !strings.Contains(log, "mallory") {
		t.Errorf("log:\n%s\nwant 3 refusals naming the remote address and the actor", log)
	}
	if strings.Contains(log, adminKey) {
		t.Error("the log shows the admin API key")
	}
}

// A short admin API key is refused: it could be guessed.
func TestAdminRefusesAShortKey(t *testing.T) {
	store := memory.New(memory.Config{})
	t.Cleanup(func() { _ = store.Close() })
	svc, err := admin.New(admin.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "adm1n", strings.Repeat("k", admin.MinAPIKeyLen-1)} {
		if _, err := svc.Handler(key); err == nil {
			t.Errorf("Handler(%q) accepted a key of %d bytes", key, len(key))
		}
	}
	if _, err := svc.Handler(strings.Repeat("k", admin.MinAPIKeyLen)); err != nil {
		t.Errorf("Handler(a key of %d bytes): %v", admin.MinAPIKeyLen, err)
	}
}
