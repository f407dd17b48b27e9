package app

import (
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/memory"
	"github.com/onceflow/onceflow/transport"
	"github.com/onceflow/onceflow/transport/broker"
)

// A route may not take the name of a handler the service registers itself:
// the router would refuse the second registration only when it runs.
func TestCheckRoutesRefusesTheServicesOwnNames(t *testing.T) {
	consume := func(*message.Message) error { return nil }
	for _, name := range []string{poisonLogHandler, outboxHandler} {
		err := checkRoutes(domain.Routes{{Name: name, Consumes: "in", Consume: consume}}, Config{DedupLease: time.Minute})
		if err == nil || !strings.Contains(err.Error(), "the service's own handler") {
			t.Errorf("checkRoutes(route %q) = %v, want it refused", name, err)
		}
	}
	if err := checkRoutes(testdomain.Routes(), Config{DedupLease: time.Minute}); err != nil {
		t.Errorf("checkRoutes(the test domain's routes) = %v", err)
	}
}

// A route's own timeout, like HANDLER_TIMEOUT, must end before the lease:
// otherwise a claim could expire while its handler still runs.
func TestCheckRoutesRefusesATimeoutTheLeaseDoesNotOutlive(t *testing.T) {
	consume := func(*message.Message) error { return nil }
	r := domain.Route{Name: "slow", Consumes: "in", Consume: consume, Timeout: time.Minute}
	if err := checkRoutes(domain.Routes{r}, Config{DedupLease: time.Minute}); err == nil || !strings.Contains(err.Error(), "must be shorter than DEDUP_LEASE=1m0s") {
		t.Errorf("checkRoutes(timeout 1m, lease 1m) = %v, want it refused", err)
	}
	if err := checkRoutes(domain.Routes{r}, Config{DedupLease: 2 * time.Minute}); err != nil {
		t.Errorf("checkRoutes(timeout 1m, lease 2m) = %v", err)
	}
}

// A route may run in transaction mode where DEDUP_MODE could: on
// STORE=postgres, and not with partitioned records on the sql transport.
func TestCheckRoutesRefusesATransactionRouteItCannotRun(t *testing.T) {
	consume := func(*message.Message) error { return nil }
	r := domain.Routes{{Name: "ledger", Consumes: "in", Consume: consume, Mode: domain.ModeTransaction}}
	lease := Config{DedupLease: time.Minute, DedupMode: "lease"}
	for _, c := range []struct {
		store, layout, transport, want string
	}{
		{"redis", "rows", "amqp", "requires STORE=postgres"},
		{"memory", "rows", "gochannel", "requires STORE=postgres"},
		{"postgres", "partitioned", "sql", "PG_RECORDS_LAYOUT=partitioned"},
		{"postgres", "rows", "sql", ""},
		{"postgres", "partitioned", "amqp", ""},
	} {
		cfg := lease
		cfg.Store, cfg.PGRecordsLayout, cfg.Transport = c.store, c.layout, c.transport
		err := checkRoutes(r, cfg)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("STORE=%s PG_RECORDS_LAYOUT=%s TRANSPORT=%s: checkRoutes = %v, want %q", c.store, c.layout, c.transport, err, c.want)
		}
	}
}

// inFlightBroker records the in-flight count each handler's subscriber is
// asked for.
type inFlightBroker struct {
	*broker.Transport
	asked map[string]int
}

func (b inFlightBroker) Subscriber(handler string, inFlight int) (message.Subscriber, error) {
	b.asked[handler] = inFlight
	return b.Transport.Subscriber(handler, inFlight)
}

// Each route's subscriber holds the route's Concurrency, else
// HANDLER_CONCURRENCY; the poison log's holds one.
func TestRouterSubscribersHoldTheRoutesConcurrency(t *testing.T) {
	cfg, err := LoadConfig([]string{"HANDLER_CONCURRENCY=5"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := transport.New(t.Context(), transport.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	store := memory.New(memory.Config{})
	t.Cleanup(func() { _ = store.Close() })
	rcv, err := receiver.New(receiver.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	consume := func(*message.Message) error { return nil }
	b := inFlightBroker{tr, map[string]int{}}
	_, err = newRouter(routerParts{
		cfg: cfg, transport: b, receivers: map[domain.Mode]*receiver.Receiver{domain.ModeLease: rcv}, poison: consume,
		routes: domain.Routes{
			{Name: "default", Consumes: "in", Consume: consume},
			{Name: "own", Consumes: "in", Consume: consume, Concurrency: 2},
		},
		metrics: routerMetrics(prometheus.NewRegistry()), logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"default": 5, "own": 2, poisonLogHandler: 1}; !maps.Equal(b.asked, want) {
		t.Errorf("subscribers asked for %v messages in flight, want %v", b.asked, want)
	}
}
