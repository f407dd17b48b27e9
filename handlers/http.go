package handlers

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Route patterns of the payments API (net/http ServeMux syntax).
const (
	RouteCreatePayment = "POST /v1/payments"
	RouteGetPayment    = "GET /v1/payments/{id}"
	RouteLedgerSummary = "GET /v1/ledger/summary"
)

// CorrelationIDHeader is the request header whose value, when well formed,
// becomes the correlation id of the messages a request publishes; otherwise
// a new one is made. The response echoes it.
const CorrelationIDHeader = "X-Correlation-ID"

// Publisher publishes messages; watermill's message.Publisher satisfies it.
type Publisher interface {
	Publish(topic string, messages ...*message.Message) error
}

var _ Publisher = message.Publisher(nil)

// HTTP serves the payments API. Its handlers are safe for concurrent use.
type HTTP struct {
	ledger    Ledger
	publisher Publisher
	logger    *slog.Logger
}

// NewHTTP returns the payments API recording payments in ledger and
// publishing PaymentRequested through publisher, neither of which may be nil.
// A nil logger discards.
func NewHTTP(ledger Ledger, publisher Publisher, logger *slog.Logger) *HTTP {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &HTTP{ledger: ledger, publisher: publisher, logger: logger}
}

// httpRoute is one pattern of the API and its handler; unsafe routes are the
// ones Routes wraps in its unsafe middleware.
type httpRoute struct {
	pattern string
	unsafe  bool
	handle  func(*HTTP, http.ResponseWriter, *http.Request)
}

// httpRoutes is the API, one table for Routes and IdempotentRoutes.
var httpRoutes = []httpRoute{
	{RouteCreatePayment, true, (*HTTP).CreatePayment},
	{RouteGetPayment, false, (*HTTP).GetPayment},
	{RouteLedgerSummary, false, (*HTTP).LedgerSummary},
}

// IdempotentRoutes lists the patterns whose handlers Routes wraps in
// unsafe: the routes whose Idempotency-Key records the key admin (package
// admin) addresses.
func IdempotentRoutes() []string {
	var patterns []string
	for _, r := range httpRoutes {
		if r.unsafe {
			patterns = append(patterns, r.pattern)
		}
	}
	return patterns
}

// Routes registers the API on mux. The handler of each unsafe method (POST)
// is wrapped in unsafe, the first outermost: that is where the
// Idempotency-Key middleware belongs. Safe methods are never wrapped.
// Handlers see their pattern in r.Pattern.
func (h *HTTP) Routes(mux *http.ServeMux, unsafe ...func(http.Handler) http.Handler) {
	for _, r := range httpRoutes {
		var handler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { r.handle(h, w, req) })
		if r.unsafe {
			for i := len(unsafe) - 1; i >= 0; i-- {
				handler = unsafe[i](handler)
			}
		}
		mux.Handle(r.pattern, handler)
	}
}

// writeJSON sends v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
