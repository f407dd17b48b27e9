package app

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport"
	"github.com/onceflow/onceflow/transport/broker"
)

// e2eCell is one transport x store combination of the end-to-end suite.
type e2eCell struct {
	transport, store string
	// instances is how many service instances share the broker, the store
	// and the ledger. The in-process transport cannot be shared between
	// instances, so its cells run one.
	instances int
	// mode is DEDUP_MODE; empty is the default, lease.
	mode string
}

// e2eCells are the cells of every kind of [transport.Kinds]: the
// in-process one on each store, with one instance; every other with two
// instances, on Redis and PostgreSQL records in lease mode and on
// PostgreSQL in transaction mode.
func e2eCells() []e2eCell {
	var cells []e2eCell
	for _, kind := range transport.Kinds {
		if kind == transport.GoChannel {
			cells = append(cells, e2eCell{kind, "memory", 1, ""}, e2eCell{kind, "redis", 1, ""}, e2eCell{kind, "postgres", 1, ""})
			continue
		}
		cells = append(cells, e2eCell{kind, "redis", 2, ""}, e2eCell{kind, "postgres", 2, ""}, e2eCell{kind, "postgres", 2, "transaction"})
	}
	return cells
}

// e2eRequests is how many distinct requests each cell sends (E2E_REQUESTS,
// default 250, the short variant of make test; make e2e sends 2,000); each
// is published three times. On sql the replicas take turns on the consumer
// group's lock a batch at a time, so fewer copies can leave a replica
// without a turn, and the check that replicas share the work fails.
func e2eRequests(t *testing.T) int {
	n, err := strconv.Atoi(testenv.Getenv("E2E_REQUESTS", "250"))
	if err != nil || n < 1 {
		t.Fatalf("E2E_REQUESTS=%q: want a positive integer", os.Getenv("E2E_REQUESTS"))
	}
	return n
}

// TestEndToEnd runs every cell: its instances consume N unique requests,
// each published three times by a producer, some copies concurrently, in a
// shuffled order. Every request must be charged, noticed and receipted
// exactly once, none missing, nothing poisoned. Each cell's time is logged
// and, with E2E_REPORT set, written to that file as a Markdown table.
func TestEndToEnd(t *testing.T) {
	testenv.Integration(t)
	requests := e2eRequests(t)
	var (
		mu     sync.Mutex
		report []string
	)
	t.Cleanup(func() {
		if path := os.Getenv("E2E_REPORT"); path != "" && len(report) > 0 {
			table := fmt.Sprintf("| transport | store | instances | requests x copies | time |\n|---|---|---|---|---|\n%s",
				strings.Join(report, ""))
			if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
				t.Errorf("writing E2E_REPORT: %v", err)
			}
		}
	})
	for _, cell := range e2eCells() {
		name, store := cell.transport+"/"+cell.store, cell.store
		if cell.mode != "" {
			name, store = name+"/"+cell.mode, store+" ("+cell.mode+")"
		}
		t.Run(name, func(t *testing.T) {
			elapsed := runCell(t, cell, requests)
			t.Logf("%s x %s: %d instances, %d requests x 3 copies in %v", cell.transport, store,
				cell.instances, requests, elapsed.Round(time.Millisecond))
			mu.Lock()
			report = append(report, fmt.Sprintf("| %s | %s | %d | %d x 3 | %v |\n",
				cell.transport, store, cell.instances, requests, elapsed.Round(10*time.Millisecond)))
			mu.Unlock()
		})
	}
}

func runCell(t *testing.T, cell e2eCell, requests int) time.Duration {
	env := cellEnv(t, cell)
	instances := make([]*running, cell.instances)
	for i := range instances {
		instances[i] = startApp(t, env...)
	}
	// Ready is not yet a member of every consumer group: on Kafka, a
	// replica that joins after the first has taken every partition gets
	// its share only at the next rebalance, which a short cell may end
	// before. Publishing starts once each group holds every replica.
	routes := testdomain.Routes()
	if cell.transport == transport.Kafka && cell.instances > 1 {
		cfg := instances[0].cfg
		groups := broker.Names{TopicPrefix: cfg.TopicPrefix, ServiceName: cfg.ServiceName}
		for _, r := range routes {
			brokerenv.WaitKafkaGroup(t, cfg.KafkaBrokers, groups.ConsumerGroup(r.Name), cell.instances)
		}
	}

	run := uuid.NewString()[:8]
	type copyOf struct{ request int }
	sends := make([]copyOf, 0, 3*requests)
	for r := range requests {
		sends = append(sends, copyOf{r}, copyOf{r}, copyOf{r})
	}
	rand.Shuffle(len(sends), func(i, j int) { sends[i], sends[j] = sends[j], sends[i] })

	pub := e2eProducer(t, cell, instances[0])
	start := time.Now()
	work := make(chan copyOf)
	var wg sync.WaitGroup
	for range 16 { // 16 producers: copies of one request often race
		wg.Go(func() {
			for s := range work {
				e := testdomain.Event{ID: fmt.Sprintf("e2e-%s-%d", run, s.request), Amount: int64(100 + s.request)}
				if err := pub.Publish(testdomain.TopicRequested, e.Message()); err != nil {
					t.Errorf("publishing: %v", err)
				}
			}
		})
	}
	for _, s := range sends {
		work <- s
	}
	close(work)
	wg.Wait()

	// Every copy ends acked as processed or duplicate: 3N for the charge
	// route, and as many charged events for each route that consumes them
	// (each duplicate replays its stored event) in lease mode; in
	// transaction mode a duplicate replays nothing, its event committed
	// with its record, so N, and on NATS the stream drops the replays,
	// which carry the request's key as their message id, so N too. Every
	// route is waited for, so that none is cut mid-attempt when the cell
	// stops.
	handled := func(route string) float64 {
		var n float64
		for _, a := range instances {
			n += flowtest.Outcomes(t, a, route, "processed") + flowtest.Outcomes(t, a, route, "duplicate")
		}
		return n
	}
	want, wantDownstream := float64(3*requests), float64(3*requests)
	if cell.mode == "transaction" || cell.transport == transport.NATS {
		wantDownstream = float64(requests)
	}
	waitForWithin(t, 5*time.Minute, "every copy handled", func() bool {
		for _, r := range routes {
			n := wantDownstream
			if r.Consumes == testdomain.TopicRequested {
				n = want
			}
			if handled(r.Name) < n {
				return false
			}
		}
		return true
	})
	elapsed := time.Since(start)

	if got, want := flowtest.Tally(t, instances[0]), flowtest.Want(requests, 0); got != want {
		t.Errorf("ledger = %+v, want %+v", got, want)
	}
	for i, a := range instances {
		if n := a.Metric(t, "onceflow_poisoned_messages_total"); n != 0 {
			t.Errorf("instance %d poisoned %v messages, want none", i, n)
		}
	}
	if cell.instances > 1 {
		for i, a := range instances {
			if n := a.Metric(t, "onceflow_receiver_outcomes_total", "scope", testdomain.ChargeRoute); n == 0 {
				t.Errorf("instance %d handled no message: replicas do not share the work", i)
			}
		}
	}
	return elapsed
}

// cellEnv configures a cell's instances: the broker's settings of
// [brokerenv.ServiceEnv], one namespace on the broker and on shared
// servers, and the same store and ledger for all of them.
func cellEnv(t *testing.T, cell e2eCell) []string {
	env := append(serviceEnv(t, cell.transport), "STORE="+cell.store)
	if cell.mode != "" {
		env = append(env, "DEDUP_MODE="+cell.mode)
	}
	if cell.store != "memory" && testenv.Setting(env, "DATABASE_URL") == "" {
		env = append(env, "DATABASE_URL="+testenv.PostgresSchema(t)) // shared ledger
	}
	if cell.store == "redis" {
		testenv.DeleteRedisKeysOnCleanup(t, testenv.Redis(t), testenv.Setting(env, "TOPIC_PREFIX"))
		env = append(env, "REDIS_URL=redis://"+testenv.RedisAddr()+"/0")
	}
	return env
}

// e2eProducer is what a cell's copies are published through, to the
// topics as the service names them: the first instance's own publisher —
// but on NATS a publisher of the transport without the receiver's key
// (Nats-Msg-Id the UUID, as watermill-nats' default publisher sends), as
// a producer outside the service publishes: the service's publisher makes
// the idempotency key the message id, so the stream would drop the racing
// copies before any receiver saw them.
func e2eProducer(t *testing.T, cell e2eCell, a *running) message.Publisher {
	if cell.transport != transport.NATS {
		return a.transport.Publisher()
	}
	tc := a.cfg.transportConfig(nil, nil, slog.New(slog.DiscardHandler))
	tc.KeyMetadata = ""
	tr, err := transport.New(t.Context(), tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr.Publisher()
}
