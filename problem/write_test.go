package problem_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/problem"
)

func TestWriteProblem(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	w.Header().Set("Retry-After", "1")
	problem.Details{Status: http.StatusConflict, Detail: "in flight"}.Write(w)

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
	if got := w.Header().Get("Content-Type"); got != problem.ContentType {
		t.Errorf("Content-Type = %q", got)
	}
}

// Every kind has its status, and Retry-After exactly when a retry may
// succeed soon.
func TestWriteKinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind       problem.Kind
		status     int
		retryAfter string
	}{
		{problem.Internal, 500, ""},
		{problem.Invalid, 400, ""},
		{problem.Unauthorized, 401, ""},
		{problem.NotFound, 404, ""},
		{problem.Conflict, 409, ""},
		{problem.InProgress, 409, "1"},
		{problem.TooLarge, 413, ""},
		{problem.UnsupportedMediaType, 415, ""},
		{problem.Mismatch, 422, ""},
		{problem.Unavailable, 503, "1"},
		{problem.Cancelled, 503, ""},
		{problem.TooManyRequests, 429, "1"},
		{problem.Forbidden, 403, ""},
		{problem.Kind(99), 500, ""},
	} {
		w := httptest.NewRecorder()
		problem.Write(w, fmt.Errorf("wrapped: %w", problem.New(tc.kind, "what went wrong")))
		want := fmt.Sprintf(`{"type":"about:blank","title":%q,"status":%d,"detail":"what went wrong"}`+"\n",
			http.StatusText(tc.status), tc.status)
		if w.Code != tc.status || w.Body.String() != want || w.Header().Get("Retry-After") != tc.retryAfter {
			t.Errorf("kind %d: %d Retry-After %q %s; want %d Retry-After %q %s",
				tc.kind, w.Code, w.Header().Get("Retry-After"), w.Body, tc.status, tc.retryAfter, want)
		}
	}
}

// An error that says how long to wait sets Retry-After to it, in whole
// seconds rounded up; kinds without Retry-After ignore it.
func TestWriteRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind problem.Kind
		wait time.Duration
		want string
	}{
		{problem.TooManyRequests, 0, "1"},
		{problem.TooManyRequests, 1, "1"},
		{problem.TooManyRequests, time.Second, "1"},
		{problem.TooManyRequests, 1500 * time.Millisecond, "2"},
		{problem.Unavailable, time.Minute, "60"},
		{problem.Invalid, time.Minute, ""},
	} {
		w := httptest.NewRecorder()
		problem.Write(w, &problem.Error{Kind: tc.kind, Detail: "wait", RetryAfter: tc.wait})
		if got := w.Header().Get("Retry-After"); got != tc.want {
			t.Errorf("kind %d, wait %v: Retry-After %q, want %q", tc.kind, tc.wait, got, tc.want)
		}
	}
}

// An error that is not a problem is a 500 that shows nothing of it.
func TestWriteOtherErrorShowsNothing(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	problem.Write(w, errors.New("dial tcp 10.0.0.7:5432: connection refused"))
	want := `{"type":"about:blank","title":"Internal Server Error","status":500}` + "\n"
	if w.Code != http.StatusInternalServerError || w.Body.String() != want {
		t.Errorf("%d %s, want 500 %s", w.Code, w.Body, want)
	}
	if got := problem.KindOf(errors.New("x")); got != problem.Internal {
		t.Errorf("KindOf(plain error) = %d, want Internal", got)
	}
}

func TestWriteFields(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	problem.Write(w, problem.New(problem.Invalid, "the payment has invalid fields",
		problem.FieldError{Field: "currency", Detail: "must be three upper-case letters"}))
	want := `{"type":"about:blank","title":"Bad Request","status":400,"detail":"the payment has invalid fields",` +
		`"errors":[{"field":"currency","detail":"must be three upper-case letters"}]}` + "\n"
	if w.Body.String() != want || w.Header().Get("Content-Length") != fmt.Sprint(len(want)) ||
		w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%v %s, want %s", w.Header(), w.Body, want)
	}
}

// A service's own look: a type URI per kind, with the table's status and
// headers.
func ExampleWriter() {
	var own problem.Writer = func(w http.ResponseWriter, err error) {
		d := problem.Prepare(w, err)
		d.Type = fmt.Sprintf("https://example.com/problems/%d", d.Status)
		d.Write(w)
	}
	w := httptest.NewRecorder()
	own(w, problem.New(problem.Unavailable, "the ledger is down: retry"))
	fmt.Println(w.Code, w.Header().Get("Retry-After"))
	fmt.Print(w.Body)
	// Output:
	// 503 1
	// {"type":"https://example.com/problems/503","title":"Service Unavailable","status":503,"detail":"the ledger is down: retry"}
}

// No request amplifies into a larger answer: a field name of 64 KiB of
// "<" — written as six bytes each when HTML-escaped, 393 KB in all — is
// quoted up to MaxQuoted bytes, unescaped, and at most MaxFields fields
// are named.
func TestWriteBoundsWhatItQuotes(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("<", 65520)
	fields := make([]problem.FieldError, 1000)
	for i := range fields {
		fields[i] = problem.FieldError{Field: huge, Detail: "is not a known field"}
	}
	w := httptest.NewRecorder()
	problem.Write(w, problem.New(problem.Invalid, huge, fields...))
	var d problem.Details
	if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if n := w.Body.Len(); n > (problem.MaxFields+1)*(problem.MaxQuoted+64) || strings.Contains(w.Body.String(), `\u003c`) {
		t.Fatalf("answer of %d bytes (escaped: %v) for a 64 KiB field name", n, strings.Contains(w.Body.String(), `\u003c`))
	}
	if len(d.Errors) != problem.MaxFields || len(d.Errors[0].Field) > problem.MaxQuoted || !strings.HasPrefix(d.Errors[0].Field, "<<<") ||
		!strings.HasSuffix(d.Detail, "…") || len(d.Detail) > problem.MaxQuoted {
		t.Fatalf("detail %d bytes, %d fields, the first %d bytes: want each cut to %d and %d fields", len(d.Detail), len(d.Errors), len(d.Errors[0].Field), problem.MaxQuoted, problem.MaxFields)
	}
}
