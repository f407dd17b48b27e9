package redisstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/ThreeDotsLabs/watermill"
	wmredisstream "github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/transport/broker"
)

// New is the Redis Streams transport on go-redis: it publishes
// with watermill-redisstream's publisher, and reads that adapter's
// entries (streamUnmarshaller) through subscriptions of its own
// (subscriber). It is also the message contract for producers
// outside this service: a producer that publishes with
// redisstream.NewPublisher(redisstream.PublisherConfig{Client: c}, logger)
// from watermill-redisstream feeds onceflow as it is.
//
//   - Stream: one per topic, its key TopicPrefix + topic (e.g.
//     "orders.placed"), created by the first XADD or by the first
//     subscriber. Consumer groups need no stream to exist beforehand.
//   - Entry: the fields of watermill-redisstream's default marshaller:
//     "_watermill_message_uuid" holds the Watermill UUID, "payload" the
//     payload, "metadata" the metadata as a MessagePack map of strings to
//     strings (empty when there is none). The idempotency key is metadata
//     "idempotency_key", or else the UUID. An entry that marshaller cannot
//     read (no UUID field, metadata that is not such a map) is still
//     delivered, see streamUnmarshaller.
//   - Consumer group: one per handler, named [broker.Names.ConsumerGroup]
//     (TopicPrefix + ServiceName + "." + handler), created at its first
//     subscription from the start of the stream (ID "0"): a message
//     published before the service ever ran is delivered, and so is every
//     entry still in the stream when a handler is added. Each
//     subscription is a consumer of its own (host name and a random
//     suffix), so replicas split the group's work, each entry going to one
//     of them. A subscription holds its in-flight count of entries at
//     once, and no more: one XREADGROUP loop reads as many new entries as
//     it has free slots and hands them out together (see
//     subscriber).
//   - Ack and claim: an entry is XACKed once its handler acked it, with
//     the other acks of that moment in one XACK. A nacked entry is handed
//     to the handler again by the same consumer after
//     [broker.Redelivery.ResendInterval], Redis not told (one nacked for longer than
//     the ack deadline is claimed by another consumer as well). An entry
//     left unacknowledged for [broker.Redelivery.AckDeadline] since it was delivered
//     (its consumer crashed) is claimed by another consumer of the group
//     and delivered again; see subscriptionConfig. A
//     subscription that ends (its context ended, its subscriber closed)
//     sends the acks it has, then hands back at once the entries it read
//     and did not ack (releasePending).
//   - Trimming: none by default, so no entry is dropped before every
//     group has read it; the streams keep acknowledged entries until an
//     operator trims them (XTRIM MINID below every group's last delivered
//     ID and pending entries). [Config.MaxLen] caps each stream
//     at about that many entries instead (XADD MAXLEN ~), dropping the
//     oldest whether or not they were read.
//   - Publishing: Publish returns once Redis has added the entry; it is as
//     durable as the server's persistence (appendonly) makes it. go-redis
//     retries a command whose connection failed, so an XADD whose reply
//     was lost may add the entry twice: the idempotent receiver absorbs
//     the copy, as it does any redelivery. Metadata
//     "_watermill_message_uuid" is reserved: the marshaller refuses it.
//
// Every subscription has two clients of its own: its reader's, of one
// connection, which XREADGROUP blocks, and one for its acks and upkeep;
// so reads never wait for the publisher's connections nor hold them. It
// needs Redis 6.2 or later (XAUTOCLAIM); on 6.2 an entry trimmed from the
// stream while pending stops the claims of its group, as 6.2 answers
// such an entry with a null that go-redis does not read (Redis 7 drops it
// from the group instead). New fails with one line, without the URL,
// when the URL does not parse (a [broker.URLError]) or Redis does not
// answer a PING within connectTimeout.
func New(ctx context.Context, cfg Config) (*broker.Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	logger := broker.Logger(cfg.Logger)
	opts, err := clientOptions(cfg)
	if err != nil {
		return nil, err
	}
	probe := redis.NewClient(redisProbeOptions(opts))
	if err := redisFirstPing(ctx, probe); err != nil {
		_ = probe.Close()
		return nil, err
	}
	pub, err := wmredisstream.NewPublisher(wmredisstream.PublisherConfig{
		Client:        redis.NewClient(opts),
		DefaultMaxlen: cfg.MaxLen,
	}, logger)
	if err != nil {
		_ = probe.Close()
		return nil, fmt.Errorf("creating the Redis Streams publisher: %w", err)
	}
	t := &transport{cfg: cfg, opts: opts, logger: logger, publisher: pub, probe: probe}
	return broker.New(broker.Parts{Publisher: pub, Subscriber: t.newSubscriber, Close: t.close, Ready: redisAnswers(probe)},
		cfg.TopicPrefix), nil
}

// transport owns the clients, the publisher and the subscribers of the
// Redis Streams transport.
type transport struct {
	cfg       Config
	opts      *redis.Options
	logger    watermill.LoggerAdapter
	publisher *wmredisstream.Publisher
	probe     *redis.Client // readiness checks
	subs      broker.Subscribers
}

// newSubscriber returns a new subscriber consuming as handler in the
// handler's group, inFlight entries at a time. Safe for concurrent use.
func (t *transport) newSubscriber(handler string, inFlight int) (message.Subscriber, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &subscriber{t: t, group: t.cfg.names().ConsumerGroup(handler), inFlight: inFlight, closing: ctx, end: cancel}
	t.subs.Add(s)
	return s, nil
}

// close closes the subscribers, then the publisher, then the readiness
// client; each subscription and the publisher close their own clients.
// Closing twice is harmless.
func (t *transport) close() error {
	return errors.Join(t.subs.Close(), t.publisher.Close(), ignoreClosed(t.probe.Close()))
}

// subscriber subscribes in one group: each Subscribe is a
// consumer of its own (consumerName) with clients of its own, reading one
// stream (subscription).
//
// A subscription holds at most inFlight entries read and not acked by
// their handlers: one reader reads new entries (XREADGROUP ">") as slots
// free up, as many at once as are free, and each entry holds its slot from
// its read until its handler acks it, nacks and resends included. Nothing
// is read ahead of a free slot, so an entry waits in the stream, for any
// replica, rather than behind a busy handler. The same reader claims
// abandoned entries into free slots (see subscriptionConfig);
// one subscription never hands out an entry it is still handing out.
// Acked entries are XACKed in batches beside the reader, at most inFlight
// waiting for their XACK while one is under way; a subscription that
// ends cuts its reader's last read short (cutRead), sends what waits,
// then releases its pending entries (releasePending).
type subscriber struct {
	t        *transport
	group    string
	inFlight int
	closing  context.Context // ends when Close is called
	end      context.CancelFunc

	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup // the subscriptions
	errs    []error        // of closing the clients of the subscriptions that ended
}

// Subscribe reads stream topic as a new consumer of the group, creating
// the group, and the stream, when they do not exist. The subscription
// ends with ctx or Close; its channel closes once it has stopped reading,
// sent its acks, handed back the entries it read and did not ack
// (releasePending) and closed its clients.
func (s *subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("subscriber closed")
	}
	s.running.Add(1)
	s.mu.Unlock()
	c := newSubscription(s, topic)
	if err := c.createGroup(ctx); err != nil {
		s.running.Done()
		_, _ = c.reader.Close(), c.client.Close()
		return nil, fmt.Errorf("subscribing %s to stream %s: %w", s.group, topic, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.closing, cancel)
	go func() {
		defer s.running.Done()
		defer cancel()
		defer stop()
		c.run(ctx)
	}()
	return c.out, nil
}

// Close ends every subscription, and returns once each has stopped
// reading, sent its acks, released the entries its consumer read and did
// not ack (see releasePending) and closed its clients, and its channel is
// closed. A message a subscription was handing out as it ended is not
// handed out.
func (s *subscriber) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.end()
	s.running.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	err := errors.Join(s.errs...)
	s.errs = nil
	return err
}

// closedClient records the error of closing a subscription's client, for
// Close to return.
func (s *subscriber) closedClient(err error) {
	if err = ignoreClosed(err); err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.errs = append(s.errs, err)
	}
}

// consumerName names a consumer of this process: the host name (the pod's,
// in Kubernetes) and a random suffix, unique to each subscription, so
// that two subscriptions never share one's pending entries.
func consumerName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "onceflow"
	}
	return host + "-" + watermill.NewShortUUID()
}

// ignoreClosed drops go-redis's error for closing a client twice.
func ignoreClosed(err error) error {
	if errors.Is(err, redis.ErrClosed) {
		return nil
	}
	return err
}
