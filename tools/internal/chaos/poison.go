package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// poisonReaderGroup names the poison reader's own queue (amqp) or consumer
// group (sql), apart from the service's poison_log handler.
const poisonReaderGroup = "chaos_poison_reader"

// Poisoned is one message read from the poison topic.
type Poisoned struct {
	UUID   string
	Reason string // metadata reason_poisoned
	Topic  string // metadata topic_poisoned
}

// PoisonReader reads the row's poison topic with a plain Watermill
// subscriber of its transport, in its own queue or consumer group, and
// keeps the first copy of every message by UUID.
type PoisonReader struct {
	mu   sync.Mutex
	seen map[string]Poisoned

	cancel context.CancelFunc
	done   chan struct{}
	stop   func()
}

// poisonTopic is the service's poison topic (app.PoisonTopic), and
// poisonLog the handler that reads it, as seen from outside the binary.
const (
	poisonTopic = "poison"
	poisonLog   = "poison_log"
)

// ReadPoison subscribes to the row's poison topic. On amqp only what is
// published after the call is seen (the reader's queue is bound now); on
// sql and kafka the whole topic is read. Close it when done.
func (r *Row) ReadPoison() (*PoisonReader, error) {
	topic := r.Prefix + poisonTopic
	var (
		sub  message.Subscriber
		stop func()
	)
	switch r.Transport {
	case "amqp":
		s, err := amqp.NewSubscriber(amqp.NewDurablePubSubConfig(r.svc.AMQPURL,
			amqp.GenerateQueueNameTopicNameWithSuffix(poisonReaderGroup)), watermill.NopLogger{})
		if err != nil {
			return nil, err
		}
		url, queue := r.svc.AMQPURL, topic+"_"+poisonReaderGroup
		sub, stop = s, func() { _ = s.Close(); deleteQueue(url, queue) }
	case "sql":
		db, err := sql.Open("pgx", r.DatabaseURL)
		if err != nil {
			return nil, err
		}
		s, err := wsql.NewSubscriber(wsql.BeginnerFromStdSQL(db), wsql.SubscriberConfig{
			ConsumerGroup:    poisonReaderGroup,
			SchemaAdapter:    wsql.DefaultPostgreSQLSchema{},
			OffsetsAdapter:   wsql.DefaultPostgreSQLOffsetsAdapter{},
			InitializeSchema: true,
		}, watermill.NopLogger{})
		if err != nil {
			_ = db.Close()
			return nil, err
		}
		sub, stop = s, func() { _ = s.Close(); _ = db.Close() }
	case "kafka":
		cfg := kafka.DefaultSaramaSubscriberConfig()
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		s, err := kafka.NewSubscriber(kafka.SubscriberConfig{
			Brokers:               r.svc.Kafka.Brokers(),
			Unmarshaler:           kafka.DefaultMarshaler{},
			OverwriteSaramaConfig: cfg,
			ConsumerGroup:         poisonReaderGroup,
		}, watermill.NopLogger{})
		if err != nil {
			return nil, err
		}
		sub, stop = s, func() { _ = s.Close() }
	default:
		return nil, fmt.Errorf("no poison reader for transport %q", r.Transport)
	}
	ctx, cancel := context.WithCancel(context.Background())
	msgs, err := sub.Subscribe(ctx, topic)
	if err != nil {
		cancel()
		stop()
		return nil, fmt.Errorf("subscribing to %s: %w", topic, err)
	}
	p := &PoisonReader{seen: map[string]Poisoned{}, cancel: cancel, done: make(chan struct{}), stop: stop}
	go func() {
		defer close(p.done)
		for msg := range msgs {
			p.mu.Lock()
			if _, ok := p.seen[msg.UUID]; !ok {
				p.seen[msg.UUID] = Poisoned{UUID: msg.UUID, Reason: msg.Metadata.Get("reason_poisoned"),
					Topic: msg.Metadata.Get("topic_poisoned")}
			}
			p.mu.Unlock()
			msg.Ack()
		}
	}()
	return p, nil
}

// Seen returns the messages read so far, by UUID.
func (p *PoisonReader) Seen() map[string]Poisoned {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]Poisoned, len(p.seen))
	for k, v := range p.seen {
		out[k] = v
	}
	return out
}

// Close stops reading and removes the reader's queue.
func (p *PoisonReader) Close() {
	p.cancel()
	p.stop()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// deleteQueue deletes a queue on the broker at url.
func deleteQueue(url, queue string) {
	withAMQPChannel(url, func(ch *amqp091.Channel) { _, _ = ch.QueueDelete(queue, false, false, false) })
}
