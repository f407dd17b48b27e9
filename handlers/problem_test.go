package handlers_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/onceflow/onceflow/handlers"
)

func TestWriteProblem(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	w.Header().Set("Retry-After", "1")
	handlers.WriteProblem(w, http.StatusConflict, "", "in flight")

	if w.Code != http.StatusConflict {
		t.Errorf("status = %d, want 409", w.Code)
	}
	if got := w.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want the header set before", got)
	}
	want := `{"type":"about:blank","title":"Conflict","status":409,"detail":"in flight"}` + "\n"
	if got := w.Body.String(); got != want {
		t.Errorf("body = %s, want %s", got, want)
	}
	if got := w.Header().Get("Content-Type"); got != handlers.ProblemContentType {
		t.Errorf("Content-Type = %q", got)
	}
}
