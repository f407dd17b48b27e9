package idempotencykey

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// The HTTP face fails closed: a request without a client identity gets a
// 403 problem and reaches neither the handler nor the store, so that a
// second caller sending the first one's key and body can never be answered
// with the first one's response. WithAnonymous makes such callers one
// anonymous client, and then that replay is what happens.
func TestHTTPRefusesRequestWithoutClient(t *testing.T) {
	var logs bytes.Buffer
	store := receivertest.NewMemory(t)
	r, err := receiver.New(receiver.Config{Store: store, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte{byte('0' + runs.Add(1))})
	})
	send := func(h http.Handler, ctx context.Context) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/things", strings.NewReader("A"))
		req.Header.Set(Header, "shared-key")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	closed := Middleware(r)(handler)
	for name, ctx := range map[string]context.Context{
		"first caller":   context.Background(),
		"second caller":  context.Background(),
		"empty identity": apikey.ContextWithClient(context.Background(), ""),
	} {
		w := send(closed, ctx)
		if w.Code != http.StatusForbidden || w.Header().Get("Content-Type") != "application/problem+json" ||
			w.Header().Get(ReplayedHeader) != "" {
			t.Errorf("%s without a client identity: %d %v %s, want a 403 problem", name, w.Code, w.Header(), w.Body)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("the handler ran %d times for requests without a client identity", n)
	}
	if n := store.Len(); n != 0 {
		t.Errorf("the store holds %d records after requests without a client identity, want none", n)
	}
	if got := strings.Count(logs.String(), "without a client identity refused"); got != 1 {
		t.Errorf("logged the refusal %d times, want once:\n%s", got, logs.String())
	}

	// With an identity the face serves as always.
	if w := send(closed, apikey.ContextWithClient(context.Background(), "client-a")); w.Code != http.StatusCreated {
		t.Errorf("with a client identity: %d %s, want 201", w.Code, w.Body)
	}

	// WithAnonymous: every caller without an identity is one client, and
	// the second is replayed the first's response.
	anonymous := Middleware(r, WithAnonymous())(handler)
	first, second := send(anonymous, context.Background()), send(anonymous, context.Background())
	if first.Code != http.StatusCreated || second.Header().Get(ReplayedHeader) != "true" ||
		!bytes.Equal(first.Body.Bytes(), second.Body.Bytes()) {
		t.Errorf("WithAnonymous: %d %q then %d replayed %q %q; want the first response replayed to the second caller",
			first.Code, first.Body, second.Code, second.Header().Get(ReplayedHeader), second.Body)
	}
}
