package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/app/apptest/testdomain"
)

// NewPublisher returns a producer that knows nothing of onceflow but the
// message contract of docs/brokers.md, built from Watermill's packages alone,
// for transport kafka (brokers), amqp (url), sql (a PostgreSQL URL, the
// service's database and schema), nats (url) or redisstream (a redis://
// URL). Close it when done.
func NewPublisher(transport, addr string, brokers []string) (message.Publisher, error) {
	switch transport {
	case "kafka":
		return kafka.NewPublisher(kafka.PublisherConfig{
			Brokers: brokers,
			Marshaler: kafka.NewWithPartitioningMarshaler(func(_ string, m *message.Message) (string, error) {
				return m.Metadata.Get("idempotency_key"), nil
			}),
		}, watermill.NopLogger{})
	case "amqp":
		return amqp.NewPublisher(amqp.NewDurablePubSubConfig(addr, nil), watermill.NopLogger{})
	case "sql":
		db, err := sql.Open("pgx", addr)
		if err != nil {
			return nil, err
		}
		pub, err := wsql.NewPublisher(wsql.BeginnerFromStdSQL(db), wsql.PublisherConfig{
			SchemaAdapter:        wsql.DefaultPostgreSQLSchema{},
			AutoInitializeSchema: true,
		}, watermill.NopLogger{})
		if err != nil {
			_ = db.Close()
			return nil, err
		}
		return closeBoth{pub, db}, nil
	case "nats":
		return wmnats.NewPublisher(wmnats.PublisherConfig{URL: addr}, watermill.NopLogger{})
	case "redisstream":
		opts, err := redis.ParseURL(addr)
		if err != nil {
			return nil, err
		}
		// The publisher closes the client with itself.
		return redisstream.NewPublisher(redisstream.PublisherConfig{Client: redis.NewClient(opts)}, watermill.NopLogger{})
	}
	return nil, fmt.Errorf("no producer for transport %q", transport)
}

// closeBoth closes the sql publisher and then its database.
type closeBoth struct {
	*wsql.Publisher
	db *sql.DB
}

func (c closeBoth) Close() error { _ = c.Publisher.Close(); return c.db.Close() }

// Publish sends copies of each request id to topic, all copies shuffled
// together, from concurrency goroutines: each copy a
// [testdomain.Event.Message] of the id, with an amount of its own that
// every copy shares. Like a producer that must not drop requests, it
// retries a failed publish (a broker outage) every
// 200 ms for up to publishRetryFor; it stops at an error that outlasts
// that, or when ctx ends, and returns how many messages it sent.
func Publish(ctx context.Context, pub message.Publisher, topic string, ids []string, copies, concurrency int) (int, error) {
	type item struct{ id, amount int }
	items := make([]item, 0, len(ids)*copies)
	for i := range ids {
		for c := range copies {
			items = append(items, item{i, c})
		}
	}
	rand.Shuffle(len(items), func(a, b int) { items[a], items[b] = items[b], items[a] })
	work := make(chan item)
	var (
		mu       sync.Mutex
		sent     int
		firstErr error
		wg       sync.WaitGroup
	)
	for range concurrency {
		wg.Go(func() {
			for it := range work {
				msg := testdomain.Event{ID: ids[it.id], Amount: int64(100 + it.id)}.Message()
				err := publishRetrying(ctx, pub, topic, msg)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("publishing request %s: %w", ids[it.id], err)
				} else if err == nil {
					sent++
				}
				mu.Unlock()
			}
		})
	}
	for _, it := range items {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		work <- it
	}
	close(work)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return sent, firstErr
}

// publishRetryFor bounds how long Publish retries one message.
const publishRetryFor = 2 * time.Minute

func publishRetrying(ctx context.Context, pub message.Publisher, topic string, msg *message.Message) error {
	deadline := time.Now().Add(publishRetryFor)
	for {
		err := pub.Publish(topic, msg)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
