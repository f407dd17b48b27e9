package nats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"

	"github.com/onceflow/onceflow/transport/broker"
)

// Tuning of the NATS transport; New explains the choices.
const (
	// dialTimeout bounds one connection attempt, so that start-up
	// against a server that accepts but never answers fails.
	dialTimeout = 5 * time.Second
	// requestTimeout bounds one JetStream API request or publish
	// without a deadline of its own.
	requestTimeout = 5 * time.Second
	// ackTimeout bounds the wait for the server to confirm an ack or a
	// nak. Acks are synchronous so that a clean shutdown leaves none
	// unconfirmed in a buffer; but one sent as the connection dropped is
	// lost (its message comes back after the ack wait), and its lane
	// takes no next message until the wait ends: it is kept short.
	ackTimeout = time.Second
	// reconnectWait is the pause between reconnection attempts, which
	// go on for as long as the transport is open.
	reconnectWait = 500 * time.Millisecond
	// duplicateWindow is how long a stream remembers the message ids
	// it took, and drops a message carrying one of them (the server's
	// default).
	duplicateWindow = 2 * time.Minute
	// maxAckPending is the least cap on the messages a handler's
	// consumer has out, delivered and not yet acked, across every replica;
	// ackPendingPerLane times the handler's in-flight count when that
	// is more. The server starts a message's ack wait when it sends the
	// message, and a replica handles its in-flight count at a time, so a
	// message sitting in a replica's buffer longer than the ack wait would
	// be sent again for nothing: a small cap keeps the buffers short while
	// still feeding a few replicas each their in-flight count.
	maxAckPending     = 32
	ackPendingPerLane = 4
	// handBackTimeout bounds the hand-back of the messages a closing
	// subscription holds in its buffer (see subscriber.handBack).
	handBackTimeout = 2 * time.Second
	// closeTimeout is how long closing a subscriber waits for its
	// subscriptions to end.
	closeTimeout = 10 * time.Second
)

// New is the NATS JetStream transport, and its doc is the message
// contract for producers outside this service: a producer that publishes
// with watermill-nats/v2's pkg/nats publisher, JetStream enabled, in its
// default configuration (NATSMarshaler, no AutoProvision, no TrackMsgId)
// to subject TOPIC_PREFIX + topic feeds onceflow as it is.
//
//   - Subject: TopicPrefix + topic, e.g. "orders.placed".
//   - Stream: one per subject, named by [broker.NATSStream] (the subject
//     with '.', '*', '>', '/', '\' and white space replaced by '_', e.g.
//     "orders_placed"), created when the service starts (for every
//     topic it consumes or publishes to) or before the first publish to
//     any other topic: file storage, retention by limits — a message stays
//     until it is [Config.MaxAge] (default 7 days) old, acked or not —
//     and a duplicate window of 2 minutes. Limits, because each handler
//     consuming a topic has a durable consumer of its own on that
//     stream: work-queue retention admits one consumer per subject, and
//     interest retention drops a message published while no consumer
//     exists yet. An existing stream is used as it is.
//   - Message: the body is the payload; each metadata entry is a header of
//     the same name; header "_watermill_message_uuid" holds the Watermill
//     UUID (without it the service takes Nats-Msg-Id, or else
//     stream:sequence, as the UUID); a header sent twice is read as its
//     values joined by ", ". The idempotency key is the header
//     [Config.KeyMetadata] names (the service's: "idempotency_key"), or
//     else the UUID.
//   - Nats-Msg-Id: the service sets it to the idempotency key, so the
//     stream drops a copy of the same key published within its window (the
//     publish is acked as a duplicate, not an error); a message parked in
//     the poison topic gets its UUID instead, and a message redriven from
//     the poison store (metadata "redriven_from") "redriven:", the id it
//     was parked under, ":" and its UUID, so that the stream does not drop
//     the redrive as a copy of the key's first publish (see
//     marshaler.msgID).
//     A re-send of a key within the window is dropped by the server even
//     when its payload differs (a corrected message re-sent after it was
//     poisoned included), where other transports hand it to the receiver.
//     Other producers may set Nats-Msg-Id the same way or leave
//     it out (watermill-nats's TrackMsgId sets it to the UUID, which only
//     drops re-publishes of one message): copies that reach a handler are
//     recognised by the idempotent receiver, the guarantee beyond the
//     window.
//   - Consuming: each handler has a durable push consumer named by
//     [broker.Names.NATSDurable] ("onceflow_ship_order"), created when
//     it subscribes, delivering from the first message of the stream (so a
//     message published before the consumer existed is delivered), shared
//     by every replica of the service as a queue group of the same name.
//     Acks are explicit and synchronous: Watermill acks once the handler
//     succeeded. An unacked message is redelivered after the ack wait
//     ([broker.Redelivery.AckDeadline]) — to any replica, also when its consumer
//     crashed. A nacked message, such as a copy whose original is still
//     in progress elsewhere, is redelivered after [broker.Redelivery.ResendInterval].
//     Each replica handles the handler's in-flight count of messages at
//     once; at most four times that (and at least 32) are out unacked at
//     a time across the replicas. A subscription that ends (a replica
//     stopping) unsubscribes, then naks what it held and had not handled,
//     for the others to take at once; a message the server was still
//     pushing to it as it unsubscribed, in flight to nobody, comes back
//     after the ack wait (so does the backlog the server pushes to a
//     subscription that ends the moment it began).
//   - Publishing: Publish returns once the stream stored the message (its
//     publish ack), so the API answers 202 only then.
//
// Built on watermill-nats/v2's pkg/nats (v2.1.3) in JetStream mode: its
// publisher and its NATSMarshaler's format. Its pkg/jetstream API, on
// nats.go's newer jetstream package and pull consumers, calls itself a
// beta: its subscriber dereferences a nil message when one does not
// unmarshal, and its publisher ignores the configured marshaler, so no
// message id could be set. The subscriber is this package's own
// (subscriber): pkg/nats's races with nats.go's callback at close.
//
// The transport uses one connection to publish, manage streams and answer
// readiness, and one per handler's subscriber. Every connection
// reconnects on its own for as long as the transport is open; a push
// consumer's subscription resumes with it, and a message left unacked
// meanwhile comes back after the ack wait. A killed server may also
// forget acks it had not yet written: those messages come back too.
func New(ctx context.Context, cfg Config) (*broker.Transport, error) {
	return newWith(ctx, cfg)
}

// newWith is New with extra options for every connection (a test's
// dialer).
func newWith(ctx context.Context, cfg Config, opts ...nats.Option) (*broker.Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	t := &transport{cfg: cfg, logger: broker.Logger(cfg.Logger), opts: opts, streams: map[string]bool{}}
	var err error
	if t.conn, err = t.connect(ctx, "publisher"); err != nil {
		return nil, err
	}
	if t.js, err = t.conn.JetStream(nats.MaxWait(requestTimeout)); err != nil {
		t.conn.Close()
		return nil, fmt.Errorf("opening JetStream: %w", err)
	}
	if err := t.createStreams(ctx); err != nil {
		t.conn.Close()
		return nil, err
	}
	pub, err := wmnats.NewPublisherWithNatsConn(t.conn, wmnats.PublisherPublishConfig{
		Marshaler:         marshaler{keyEntry: cfg.KeyMetadata},
		SubjectCalculator: wmnats.DefaultSubjectCalculator,
		JetStream:         wmnats.JetStreamConfig{ConnectOptions: []nats.JSOpt{nats.MaxWait(requestTimeout)}},
	}, t.logger)
	if err != nil {
		t.conn.Close()
		return nil, fmt.Errorf("creating the NATS publisher: %w", err)
	}
	t.publisher = pub
	return broker.New(broker.Parts{
		Publisher:  publisher{pub, t},
		Subscriber: t.newSubscriber,
		Close:      t.close,
		Ready:      t.ready,
	}, cfg.TopicPrefix), nil
}

// transport owns the connections, the publisher and the subscribers of
// the NATS transport.
type transport struct {
	cfg       Config
	logger    watermill.LoggerAdapter
	opts      []nats.Option
	conn      *nats.Conn // the publisher's, also for streams and readiness
	js        nats.JetStreamContext
	publisher *wmnats.Publisher
	subs      broker.Subscribers

	mu      sync.Mutex
	streams map[string]bool // subjects whose stream is known to exist
}

// connect opens a connection named after the service and role, which
// reconnects for as long as it is open. The first attempt is not retried:
// an unreachable server fails start-up at once (or after dialTimeout).
func (t *transport) connect(ctx context.Context, role string) (*nats.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("connecting to NATS: %w", err)
	}
	fields := watermill.LogFields{"role": role}
	opts := append([]nats.Option{
		nats.Name(t.cfg.ServiceName + " " + role),
		nats.Timeout(dialTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(reconnectWait),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				t.logger.Info("NATS connection lost, reconnecting", fields.Add(watermill.LogFields{"err": err.Error()}))
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { t.logger.Info("NATS connection restored", fields) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			t.logger.Error("NATS asynchronous error", err, fields)
		}),
	}, t.opts...)
	nc, err := nats.Connect(t.cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS: %w", err)
	}
	return nc, nil
}

// ready is nil when the server answers a JetStream account request on the
// publisher's connection within ctx (or requestTimeout when ctx has no
// deadline): while the connection is down, the request waits in its buffer
// and ctx ends first.
func (t *transport) ready(ctx context.Context) error {
	ctx, cancel := requestContext(ctx)
	defer cancel()
	if _, err := t.js.AccountInfo(nats.Context(ctx)); err != nil {
		return fmt.Errorf("asking NATS JetStream: %w", err)
	}
	return nil
}

// requestContext is ctx, bounded by requestTimeout when it has no
// deadline: nats.go refuses a request context without one.
func requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, requestTimeout)
}

// close closes the subscribers (each drains its connection: a message
// still unacked is redelivered after the ack wait), then the publisher,
// which closes the publisher's connection. Closing twice is harmless.
func (t *transport) close() error {
	err := t.subs.Close()
	if t.publisher != nil {
		err = errors.Join(err, t.publisher.Close())
	}
	return err
}

// publisher creates the stream of a topic that was not among
// [Config.Topics] before its first message, so that publishing never
// fails for want of a stream (JetStream would answer "no responders").
type publisher struct {
	message.Publisher
	t *transport
}

func (p publisher) Publish(topic string, msgs ...*message.Message) error {
	if err := p.t.ensureStream(context.Background(), topic); err != nil {
		return err
	}
	return p.Publisher.Publish(topic, msgs...)
}
