package idempotencykey

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// A client over its quota is told when to come back: Retry-After is the
// wait for its next record, and each refusal is counted as rate_limited,
// whether the face refused before claiming or after.
func TestHTTPClientQuotaRetryAfter(t *testing.T) {
	f := newHTTPFixture(t, receiver.Config{}, nil, nil, WithClientQuota(3, time.Minute)) // a record every 20s
	for i := range 3 {
		if w := f.do(post("/things/1", "k"+strconv.Itoa(i), "A")); w.Code != http.StatusCreated {
			t.Fatalf("record %d: status %d, want 201", i, w.Code)
		}
	}
	for i := range 5 {
		w := f.do(post("/things/1", "over-"+strconv.Itoa(i), "A"))
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Content-Type") != "application/problem+json" {
			t.Fatalf("over the quota: %d %s, want a 429 problem", w.Code, w.Body)
		}
		if wait, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || wait < 19 || wait > 20 {
			t.Fatalf("Retry-After %q, want about 20 (seconds)", w.Header().Get("Retry-After"))
		}
	}
	if got := f.runs.Load(); got != 3 {
		t.Errorf("handler ran %d times, want 3", got)
	}
	if got := f.rec.Count(receiver.OutcomeRateLimited); got != 5 {
		t.Errorf("rate_limited = %d, want 5", got)
	}
}

// Without a quota option the face has the default one: a flood from one
// client is cut at DefaultClientRecords, plus what the allowance refills
// while the flood runs.
func TestHTTPClientQuotaIsOnByDefault(t *testing.T) {
	f := newHTTPFixture(t, receiver.Config{}, nil, nil)
	const flood = DefaultClientRecords + 500
	created := 0
	start := time.Now()
	for i := range flood {
		switch w := f.do(post("/things/1", "k"+strconv.Itoa(i), "A")); w.Code {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("request %d: status %d", i, w.Code)
		}
	}
	refilled := int(time.Since(start).Seconds() * DefaultClientRecords / DefaultClientWindow.Seconds())
	if created < DefaultClientRecords || created > DefaultClientRecords+refilled+1 {
		t.Errorf("%d of %d requests created a record, want %d plus at most the %d refilled meanwhile",
			created, flood, DefaultClientRecords, refilled)
	}
}

// Large answers spend the byte budget: a client whose every answer is as
// large as the face stores is refused new keys once its answers weigh the
// budget, however few records they are, and another client is served.
func TestHTTPClientBytesBoundWhatAClientStores(t *testing.T) {
	const answer = 16 << 10
	big := func(w http.ResponseWriter, _ *http.Request, _ int32) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(make([]byte, answer))
	}
	keys := map[string]string{"key-a": "client-a", "key-b": "client-b"}
	f := newHTTPFixture(t, receiver.Config{}, keys, big,
		WithClientQuota(0, time.Hour), WithClientBytes(100<<10), WithMaxStoredResponse(answer))
	as := func(key string, k string) request { return post("/things/1", k, "A", "Authorization", "Bearer "+key) }
	stored := 0
	for i := range 20 {
		w := f.do(as("key-a", "k"+strconv.Itoa(i)))
		if w.Code == http.StatusTooManyRequests {
			if wait, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || wait < 60 {
				t.Errorf("over its bytes: Retry-After %q, want the wait for its debt (minutes)", w.Header().Get("Retry-After"))
			}
			break
		}
		if w.Code != http.StatusCreated {
			t.Fatalf("answer %d: status %d", i, w.Code)
		}
		stored++
	}
	// 100 KiB holds four answers of 16 KiB in their envelopes (base64: a
	// third more); the fifth is stored in debt, the sixth refused.
	if stored != 5 {
		t.Errorf("stored %d answers of 16 KiB within 100 KiB, want 5", stored)
	}
	if w := f.do(as("key-b", "b")); w.Code != http.StatusCreated {
		t.Errorf("another client: %d, want 201", w.Code)
	}
}
