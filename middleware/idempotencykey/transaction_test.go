package idempotencykey

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
)

// In transaction mode a failed commit rolls the handler's effects back, so
// the HTTP face must not send the handler's answer: the client gets a 503
// and its retry runs the handler again.
func TestTransactionModeHTTPCommitFailureIsNotAnswered(t *testing.T) {
	r, _, count := receivertest.NewTxReceiver(t, true)
	h := Middleware(r, WithAnonymous())(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := receivertest.Effect(req.Context()); err != nil {
			t.Error(err)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	w := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/things", strings.NewReader("{}"))
	req.Header.Set(Header, "k-1")
	h.ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("status after a failed commit = %d, want 503", w.Code)
	}
	if n := count(); n != 0 {
		t.Errorf("%d effects survived the failed commit", n)
	}
}
