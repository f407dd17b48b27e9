package app

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
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

func e2eCells() []e2eCell {
	return []e2eCell{
		{"gochannel", "memory", 1, ""},
		{"gochannel", "redis", 1, ""},
		{"gochannel", "postgres", 1, ""},
		{"kafka", "redis", 2, ""},
		{"kafka", "postgres", 2, ""},
		{"kafka", "postgres", 2, "transaction"},
		{"amqp", "redis", 2, ""},
		{"amqp", "postgres", 2, ""},
		{"sql", "redis", 2, ""},
		{"sql", "postgres", 2, ""},
		{"sql", "postgres", 2, "transaction"},
		{"nats", "redis", 2, ""},
		{"nats", "postgres", 2, ""},
		{"nats", "postgres", 2, "transaction"},
		{"redisstream", "redis", 2, ""},
		{"redisstream", "postgres", 2, ""},
		{"redisstream", "postgres", 2, "transaction"},
	}
}

// e2ePayments is how many distinct payments each cell sends (E2E_PAYMENTS,
// default 250, the short variant of make test; make e2e sends 2,000); each
// is published three times. On sql the replicas take turns on the consumer
// group's lock a batch at a time, so fewer copies can leave a replica
// without a turn, and the check that replicas share the work fails.
func e2ePayments(t *testing.T) int {
	n, err := strconv.Atoi(testenv.Getenv("E2E_PAYMENTS", "250"))
	if err != nil || n < 1 {
		t.Fatalf("E2E_PAYMENTS=%q: want a positive integer", os.Getenv("E2E_PAYMENTS"))
	}
	return n
}

// TestEndToEnd runs every cell: its instances consume N unique payments,
// each published three times by a producer, some copies concurrently, in a
// shuffled order. Every payment must be charged and notified exactly once,
// none missing, nothing poisoned. Each cell's time is logged and, with
// E2E_REPORT set, written to that file as a Markdown table.
func TestEndToEnd(t *testing.T) {
	testenv.Integration(t)
	payments := e2ePayments(t)
	var (
		mu     sync.Mutex
		report []string
	)
	t.Cleanup(func() {
		if path := os.Getenv("E2E_REPORT"); path != "" && len(report) > 0 {
			table := fmt.Sprintf("| transport | store | instances | payments x copies | time |\n|---|---|---|---|---|\n%s",
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
			elapsed := runCell(t, cell, payments)
			t.Logf("%s x %s: %d instances, %d payments x 3 copies in %v", cell.transport, store,
				cell.instances, payments, elapsed.Round(time.Millisecond))
			mu.Lock()
			report = append(report, fmt.Sprintf("| %s | %s | %d | %d x 3 | %v |\n",
				cell.transport, store, cell.instances, payments, elapsed.Round(10*time.Millisecond)))
			mu.Unlock()
		})
	}
}

func runCell(t *testing.T, cell e2eCell, payments int) time.Duration {
	env := cellEnv(t, cell)
	instances := make([]*running, cell.instances)
	for i := range instances {
		instances[i] = startApp(t, env...)
	}
	// Ready is not yet a member of every consumer group: on Kafka, a
	// replica that joins after the first has taken every partition gets
	// its share only at the next rebalance, which a short cell may end
	// before. Publishing starts once each group holds every replica.
	if cell.transport == "kafka" && cell.instances > 1 {
		cfg := instances[0].cfg
		groups := broker.Names{TopicPrefix: cfg.TopicPrefix, ServiceName: cfg.ServiceName}
		for _, r := range paymentRoutes() {
			brokerenv.WaitKafkaGroup(t, cfg.KafkaBrokers, groups.ConsumerGroup(r.Name), cell.instances)
		}
	}

	run := uuid.NewString()[:8]
	type copyOf struct{ payment int }
	sends := make([]copyOf, 0, 3*payments)
	for p := range payments {
		sends = append(sends, copyOf{p}, copyOf{p}, copyOf{p})
	}
	rand.Shuffle(len(sends), func(i, j int) { sends[i], sends[j] = sends[j], sends[i] })

	pub, topic := e2eProducer(t, cell, instances[0])
	start := time.Now()
	requestedAt := start.UTC()
	work := make(chan copyOf)
	var wg sync.WaitGroup
	for range 16 { // 16 producers: copies of one payment often race
		wg.Go(func() {
			for s := range work {
				msg, err := handlers.PaymentRequested{
					PaymentID: fmt.Sprintf("e2e-%s-%d", run, s.payment), CustomerID: "cust-e2e",
					AmountCents: int64(100 + s.payment), Currency: "EUR", RequestedAt: requestedAt,
				}.Message()
				if err == nil {
					err = pub.Publish(topic, msg)
				}
				if err != nil {
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

	// Every copy ends acked as processed or duplicate: 3N for charge_payment,
	// and as many PaymentCharged for each route that consumes it (each
	// duplicate replays its stored event) in lease mode; in transaction mode
	// a duplicate replays nothing, its event committed with its record, so
	// N, and on NATS the stream drops the replays, which carry the
	// payment's key as their message id, so N too. Every route is waited
	// for, so that none is cut mid-attempt when the cell stops.
	handled := func(handler string) float64 {
		var n float64
		for _, a := range instances {
			n += a.metric(t, "onceflow_receiver_outcomes_total", "scope", handler, "outcome", "processed")
			n += a.metric(t, "onceflow_receiver_outcomes_total", "scope", handler, "outcome", "duplicate")
		}
		return n
	}
	want, wantNotify := float64(3*payments), float64(3*payments)
	if cell.mode == "transaction" || cell.transport == "nats" {
		wantNotify = float64(payments)
	}
	routes := paymentRoutes()
	waitForWithin(t, 5*time.Minute, "every copy handled", func() bool {
		for _, r := range routes {
			n := wantNotify
			if r.Consumes == handlers.TopicPaymentRequested {
				n = want
			}
			if handled(r.Name) < n {
				return false
			}
		}
		return true
	})
	elapsed := time.Since(start)

	if got, want := instances[0].summary(t), (summary{payments, payments, payments}); got != want {
		t.Errorf("ledger = %+v, want %+v", got, want)
	}
	for i, a := range instances {
		if n := a.metric(t, "onceflow_poisoned_messages_total"); n != 0 {
			t.Errorf("instance %d poisoned %v messages, want none", i, n)
		}
	}
	if cell.instances > 1 {
		for i, a := range instances {
			if n := a.metric(t, "onceflow_receiver_outcomes_total", "scope", handlers.ChargePaymentHandler); n == 0 {
				t.Errorf("instance %d handled no message: replicas do not share the work", i)
			}
		}
	}
	return elapsed
}

// cellEnv configures a cell's instances: the same broker namespace, store
// and ledger for all of them, and a namespace of their own on shared servers.
func cellEnv(t *testing.T, cell e2eCell) []string {
	ns := "e2e_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	env := []string{
		"TRANSPORT=" + cell.transport, "STORE=" + cell.store,
		"SERVICE_NAME=" + ns, "TOPIC_PREFIX=" + ns + ".",
	}
	if cell.mode != "" {
		env = append(env, "DEDUP_MODE="+cell.mode)
	}
	if cell.store != "memory" {
		env = append(env, "DATABASE_URL="+testenv.PostgresSchema(t)) // shared ledger
	}
	if cell.store == "redis" || cell.transport == "redisstream" {
		testenv.DeleteRedisKeysOnCleanup(t, testenv.Redis(t), ns+".")
		env = append(env, "REDIS_URL=redis://"+testenv.RedisAddr()+"/0")
	}
	switch cell.transport {
	case "kafka":
		env = append(env, "KAFKA_BROKERS="+strings.Join(brokerenv.Kafka(t), ","))
	case "amqp":
		url := brokerenv.AMQP(t)
		deleteServiceAMQPOnCleanup(t, url, ns+".", ns)
		env = append(env, "AMQP_URL="+url)
	case "nats":
		url := brokerenv.NATS(t)
		brokerenv.DeleteNATSStreamsOnCleanup(t, url, broker.NATSStream(ns+"."))
		env = append(env, "NATS_URL="+url)
	}
	return env
}

// e2eProducer is where a cell's copies are published: the first
// instance's own publisher, with the topic as the service names it — but
// on NATS a producer outside the service (watermill-nats alone, the
// message contract), publishing to the topic on the broker: the service's
// publisher makes the idempotency key the message id, so the stream would
// drop the racing copies before any receiver saw them.
func e2eProducer(t *testing.T, cell e2eCell, a *running) (message.Publisher, string) {
	if cell.transport != "nats" {
		return a.transport.Publisher(), handlers.TopicPaymentRequested
	}
	pub, err := wmnats.NewPublisher(wmnats.PublisherConfig{URL: a.cfg.NATSURL}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	return pub, a.cfg.TopicPrefix + handlers.TopicPaymentRequested
}
