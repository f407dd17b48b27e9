package transport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// newRedisStream is the Redis Streams transport (watermill-redisstream on
// go-redis). It is also the message contract for producers outside this
// service: a producer that publishes with
// redisstream.NewPublisher(redisstream.PublisherConfig{Client: c}, logger)
// from watermill-redisstream feeds onceflow as it is.
//
//   - Stream: one per topic, its key TopicPrefix + topic (e.g.
//     "payments.requested"), created by the first XADD or by the first
//     subscriber. Consumer groups need no stream to exist beforehand.
//   - Entry: the fields of watermill-redisstream's default marshaller:
//     "_watermill_message_uuid" holds the Watermill UUID, "payload" the
//     payload, "metadata" the metadata as a MessagePack map of strings to
//     strings (empty when there is none). The idempotency key is metadata
//     "idempotency_key", or else the UUID. An entry that marshaller cannot
//     read (no UUID field, metadata that is not such a map) is still
//     delivered, see streamUnmarshaller.
//   - Consumer group: one per handler, named [Config.ConsumerGroup]
//     (TopicPrefix + ServiceName + "." + handler), created at its first
//     subscription from the start of the stream (ID "0"): a message
//     published before the service ever ran is delivered, and so is every
//     entry still in the stream when a handler is added. Each
//     subscription is a consumer of its own (host name and a random
//     suffix), so replicas split the group's work, each entry going to one
//     of them. A subscription holds its in-flight count of entries at
//     once: it reads the stream in as many lanes, each an XREADGROUP loop
//     of that consumer handing out one entry at a time (see
//     redisStreamSubscriber).
//   - Ack and claim: an entry is XACKed once its handler acked it. A
//     nacked entry is handed to the handler again by the same consumer
//     after [Config.ResendInterval], Redis not told (one nacked for longer
//     than the ack deadline is claimed by another consumer as well). An
//     entry left unacknowledged for
//     [Config.AckDeadline] since it was delivered (its consumer crashed)
//     is XCLAIMed by another consumer of the group and delivered again;
//     see redisStreamSubscriberConfig. A subscription that ends (its
//     context ended, its subscriber closed) hands back at once the entries
//     it read and did not ack (releasePending).
//   - Trimming: none by default, so no entry is dropped before every
//     group has read it; the streams keep acknowledged entries until an
//     operator trims them (XTRIM MINID below every group's last delivered
//     ID and pending entries). [Config.RedisStreamMaxLen] caps each stream
//     at about that many entries instead (XADD MAXLEN ~), dropping the
//     oldest whether or not they were read.
//   - Publishing: Publish returns once Redis has added the entry; it is as
//     durable as the server's persistence (appendonly) makes it. go-redis
//     retries a command whose connection failed, so an XADD whose reply
//     was lost may add the entry twice: the idempotent receiver absorbs
//     the copy, as it does any redelivery. Metadata
//     "_watermill_message_uuid" is reserved: the marshaller refuses it.
//
// Every subscription has a client of its own, whose XREADGROUP blocks one
// of its connections, so reads never wait for the publisher's connections
// nor hold them. [New] fails with one line, without the URL, when the URL
// does not parse or Redis does not answer a PING within
// redisStreamConnectTimeout.
func newRedisStream(ctx context.Context, cfg Config, logger watermill.LoggerAdapter) (Transport, error) {
	opts, err := redisStreamOptions(cfg)
	if err != nil {
		return Transport{}, err
	}
	probe := redis.NewClient(redisProbeOptions(opts))
	if err := redisFirstPing(ctx, probe); err != nil {
		_ = probe.Close()
		return Transport{}, err
	}
	pub, err := redisstream.NewPublisher(redisstream.PublisherConfig{
		Client:        redis.NewClient(opts),
		DefaultMaxlen: cfg.RedisStreamMaxLen,
	}, logger)
	if err != nil {
		_ = probe.Close()
		return Transport{}, fmt.Errorf("creating the Redis Streams publisher: %w", err)
	}
	t := &redisStreamTransport{cfg: cfg, opts: opts, logger: logger, publisher: pub, probe: probe}
	return Transport{publisher: pub, subscriber: t.subscriber, close: t.close, ready: redisAnswers(probe)}, nil
}

// redisStreamTransport owns the clients, the publisher and the
// subscribers of the Redis Streams transport.
type redisStreamTransport struct {
	cfg       Config
	opts      *redis.Options
	logger    watermill.LoggerAdapter
	publisher *redisstream.Publisher
	probe     *redis.Client // readiness checks
	subs      subscribers
}

// subscriber returns a new subscriber consuming as handler in the
// handler's group, inFlight entries at a time. Safe for concurrent use.
func (t *redisStreamTransport) subscriber(handler string, inFlight int) (message.Subscriber, error) {
	s := &redisStreamSubscriber{t: t, group: t.cfg.ConsumerGroup(handler), inFlight: inFlight}
	s.logger = closingLogger{t.logger, &s.closed}
	t.subs.add(s)
	return s, nil
}

// close closes the subscribers, then the publisher, then the readiness
// client; each subscriber and the publisher close their own client.
// Closing twice is harmless.
func (t *redisStreamTransport) close() error {
	return errors.Join(t.subs.close(), t.publisher.Close(), ignoreClosed(t.probe.Close()))
}

// redisStreamSubscriber subscribes in one group: each Subscribe is a
// consumer of its own (consumerName) through a watermill-redisstream
// subscriber with a client of its own, told the stream it reads, so that
// it can recreate the group should the stream vanish (see
// redisStreamSubscriberConfig).
//
// Each Subscribe holds inFlight entries at once: it subscribes the
// adapter's subscriber inFlight times, all as its one consumer, and
// merges the subscriptions (subscribeLanes). An adapter's subscription
// reads one entry, hands it out and waits for its ack (then XACKs it) or
// nack (then hands it out again after the resend interval) before it
// takes the next; the adapter has no setting for more. Lanes of one
// consumer read distinct new entries (XREADGROUP ">"), and keep one
// pending list, which releasePending hands back when the subscription
// ends, by its context or Close. A lane reads up to two entries ahead of
// its handler, so a subscription holds up to three times inFlight: those
// read ahead wait for their lane, even while another replica is idle,
// until the subscription ends. Each lane also claims abandoned entries (a
// look every claim interval) and looks for dead consumers, as a
// subscriber of its own would. The client has connections for every
// lane's blocking read and its acks (redisStreamPoolSize).
type redisStreamSubscriber struct {
	t        *redisStreamTransport
	group    string
	inFlight int
	logger   watermill.LoggerAdapter // silent once closed is set
	closed   atomic.Bool
	subs     laneSubscriptions

	mu   sync.Mutex
	errs []error // of closing the subscriptions that ended
}

// Subscribe reads stream topic as a new consumer of the group, creating
// the group, and the stream, when they do not exist. The subscription
// ends with ctx or Close; its channel closes once it has closed its client
// and handed back the entries it read and did not ack (releasePending).
func (s *redisStreamSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if s.closed.Load() {
		return nil, errors.New("subscriber closed")
	}
	consumer := consumerName()
	opts := *s.t.opts
	opts.PoolSize = redisStreamPoolSize(s.inFlight)
	client := redis.NewClient(&opts)
	sub, err := redisstream.NewSubscriber(redisStreamSubscriberConfig(s.t.cfg, client, topic, s.group, consumer), s.logger)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("creating the Redis Streams subscriber of %s: %w", s.group, err)
	}
	ch, err := s.subs.subscribe(ctx, s.inFlight, func(ctx context.Context) (<-chan *message.Message, error) {
		return sub.Subscribe(ctx, topic)
	}, func() {
		err := ignoreClosed(sub.Close()) // its lanes have ended: this closes its client
		s.releasePending(topic, consumer)
		if err != nil {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.errs = append(s.errs, err)
		}
	})
	if err != nil {
		_ = sub.Close()
		s.releasePending(topic, consumer) // what the lanes that opened read
		return nil, fmt.Errorf("subscribing %s to stream %s: %w", s.group, topic, err)
	}
	return ch, nil
}

// Close ends every subscription, and returns once each has closed its
// client and released the entries its consumer read and did not ack (see
// releasePending), and its channel is closed. A message a subscription
// was handing out as it ended is nacked, not handed out (see
// subscribeLanes).
func (s *redisStreamSubscriber) Close() error {
	s.closed.Store(true)
	s.subs.end()
	s.mu.Lock()
	defer s.mu.Unlock()
	err := errors.Join(s.errs...)
	s.errs = nil
	return err
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
