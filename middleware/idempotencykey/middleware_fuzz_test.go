package idempotencykey

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/dunglas/httpsfv"

	"github.com/onceflow/onceflow/middleware/apikey"
	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// fuzzStatuses are the statuses the fuzzed handler answers with.
var fuzzStatuses = []int{200, 201, 204, 400, 404, 409, 429, 500, 503}

// FuzzHTTPIdempotency sends a request with arbitrary Idempotency-Key and
// Authorization values and body, then a retry with the same key and
// perhaps another body. The face must not panic, must never answer 5xx
// itself (only the handler may), and must replay exactly what it stored:
// status, headers and body, also to the key's other form (an sf-string
// for a bare key, and the other way round).
//
//	go test -run '^$' -fuzz '^FuzzHTTPIdempotency$' ./middleware/idempotencykey/
func FuzzHTTPIdempotency(f *testing.F) {
	f.Add("k", "Bearer key-a", []byte(`{"a":1}`), []byte(`{"a":1}`), uint8(1), uint16(10), true)
	f.Add("k", "", []byte(`{"a":1}`), []byte(`{"a":2}`), uint8(0), uint16(0), false)
	f.Add("", "Bearer key-b", []byte("x"), []byte("x"), uint8(3), uint16(1), true)
	f.Add("\x00\r\n", "Bearer", []byte{}, []byte{0xff}, uint8(7), uint16(200), true)
	f.Add(`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "bearer key-a", []byte(nil), []byte(nil), uint8(2), uint16(64), true)
	f.Add("ключ", "Basic a2V5", []byte("body"), []byte("body"), uint8(6), uint16(65), false)
	f.Add(`"abc-123"`, "Bearer key-a", []byte(`{"a":1}`), []byte(`{"a":1}`), uint8(1), uint16(3), true)
	f.Add("abc-123", "", []byte(`{"a":1}`), []byte(`{"a":1}`), uint8(0), uint16(3), false)
	f.Add(`"unterminated`, "", []byte("x"), []byte("x"), uint8(0), uint16(1), false)
	f.Add(`"a";b=1`, "", []byte("x"), []byte("x"), uint8(0), uint16(1), false)
	f.Fuzz(func(t *testing.T, key, auth string, body, retryBody []byte, statusIdx uint8, size uint16, withAuth bool) {
		status := fuzzStatuses[int(statusIdx)%len(fuzzStatuses)]
		r, _ := receivertest.NewReceiver(t, receiver.Config{})
		opts := []Option{WithMaxRequestBody(1 << 10), WithMaxStoredResponse(64), WithReplayedHeaders("X-Handler")}
		if !withAuth {
			opts = append(opts, WithAnonymous())
		}
		var h http.Handler = Middleware(r, opts...)(
			http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				w.Header().Set("X-Handler", "1")
				w.WriteHeader(status)
				_, _ = w.Write(bytes.Repeat([]byte("r"), int(size)%128))
			}))
		if withAuth {
			keys, err := apikey.NewKeys(clientKeys)
			if err != nil {
				t.Fatal(err)
			}
			h = apikey.Authenticate(keys, nil)(h)
		}
		mux := http.NewServeMux()
		mux.Handle("POST /things/{id}", h)
		send := func(body []byte) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/things/1", bytes.NewReader(body))
			req.Header[Header] = []string{key}
			req.Header["Authorization"] = []string{auth}
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, req)
			if w.Code >= 500 && w.Header().Get("X-Handler") == "" {
				t.Fatalf("the middleware answered %d: %s", w.Code, w.Body)
			}
			return w
		}
		first, retry := send(body), send(retryBody)
		if first.Header().Get("X-Handler") == "" || first.Header().Get(ReplayedHeader) != "" {
			return // refused before the handler ran
		}
		stored := status < 500 && status != 429 && (status == 204 || int(size)%128 <= 64)
		switch {
		case len(retryBody) > 1<<10:
			if retry.Code != http.StatusRequestEntityTooLarge {
				t.Fatalf("retry with a body over the limit: %d, want 413", retry.Code)
			}
		case !stored:
			if retry.Header().Get(ReplayedHeader) != "" {
				t.Fatalf("status %d with %d bytes was replayed", status, int(size)%128)
			}
		case !bytes.Equal(body, retryBody):
			if retry.Code != http.StatusUnprocessableEntity {
				t.Fatalf("retry with another body: %d, want 422", retry.Code)
			}
		case retry.Code != first.Code || !bytes.Equal(retry.Body.Bytes(), first.Body.Bytes()) ||
			retry.Header().Get(ReplayedHeader) != "true":
			t.Fatalf("retry: %d %q replayed %q; want a replay of %d %q",
				retry.Code, retry.Body, retry.Header().Get(ReplayedHeader), first.Code, first.Body)
		default:
			replayed := retry.Header().Clone()
			replayed.Del(ReplayedHeader)
			if !reflect.DeepEqual(replayed, first.Header()) {
				t.Fatalf("replayed headers %v, want those of the first answer %v", replayed, first.Header())
			}
			// The key's other form, quoted or bare, names the same record.
			if other, ok := otherKeyForm(key); ok {
				key = other
				if again := send(retryBody); !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) ||
					again.Header().Get(ReplayedHeader) != "true" {
					t.Fatalf("retry with %s: %d %q, want the replay of %q", other, again.Code, again.Body, first.Body)
				}
			}
		}
	})
}

// otherKeyForm returns the other form of an accepted Idempotency-Key value:
// the sf-string of a bare key, the bare key of an sf-string whose content
// does not begin with '"' or '(' (which would make it a Structured Field).
func otherKeyForm(v string) (string, bool) {
	key, err := idempotencyKey(http.Header{Header: {v}})
	switch {
	case err != nil || key == "":
		return "", false
	case key != v:
		return key, key[0] != '"' && key[0] != '('
	}
	quoted, err := httpsfv.Marshal(httpsfv.NewItem(key))
	return quoted, err == nil
}
