package idempotencykey

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// paymentsHandler answers as the payments handler does: 202 with a small
// JSON body naming the request's first bytes, and two headers.
var paymentsHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Correlation-ID", "c-1")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, `{"payment_id":%q,"status":"accepted"}`, body[:8])
})

// paymentsMux serves h as POST /v1/charges.
func paymentsMux(h http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", h)
	return mux
}

// paymentRequest is the i-th request to paymentsMux: a payload unique to i
// under the Idempotency-Key i.
func paymentRequest(i int) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/v1/charges", bytes.NewReader(receivertest.BenchPayload(i)))
	req.Header.Set(Header, strconv.Itoa(i))
	return req
}

// BenchmarkHTTP is the HTTP face's cost per request on the memory store:
// paymentsHandler served through a ServeMux to a recorder, with no
// middleware and behind [Middleware]. Every request carries a fresh key.
// The face's cost is (receiver-memory - none). Its client quota is one
// that never refuses, so that its cost is measured with the rest.
func BenchmarkHTTP(b *testing.B) {
	for _, name := range []string{"none", "receiver-memory"} {
		b.Run(name, func(b *testing.B) {
			var h http.Handler = paymentsHandler
			if name != "none" {
				r, _ := receivertest.NewBenchReceiver(b, receiver.Config{})
				h = Middleware(r, WithAnonymous(), WithClientQuota(math.MaxInt32, time.Second))(paymentsHandler)
			}
			mux := paymentsMux(h)
			b.ReportAllocs()
			start := testenv.CPUTime(b)
			i := 0
			for b.Loop() {
				i++
				w := httptest.NewRecorder()
				mux.ServeHTTP(w, paymentRequest(i))
				if w.Code != http.StatusAccepted {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			testenv.ReportCPU(b, start)
		})
	}
}
