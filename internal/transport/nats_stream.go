package transport

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/nats-io/nats.go"
)

// NATSStream names the JetStream stream of subject, a topic with
// TopicPrefix prepended: the subject with every character a stream name
// cannot hold ('.', '*', '>', '/', '\\' and white space) replaced by '_',
// e.g. "payments.requested" → "payments_requested". Subjects that differ
// only there ("a.b", "a_b") would share a name; the second one's stream
// cannot be created and the transport says so.
func NATSStream(subject string) string { return natsName(subject) }

// NATSDurable names the durable consumer, and its queue group, through
// which handler consumes on NATS: [Config.ConsumerGroup] with the
// characters a consumer name cannot hold replaced as in [NATSStream], e.g.
// "onceflow_charge_payment".
func (c Config) NATSDurable(handler string) string { return natsName(c.ConsumerGroup(handler)) }

func natsName(s string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(".*>/\\", r) || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return '_'
		}
		return r
	}, s)
}

// createStreams creates the streams of [Config.Topics] at start-up, within
// ctx, after checking that the server has JetStream.
func (t *natsTransport) createStreams(ctx context.Context) error {
	rctx, cancel := requestContext(ctx)
	defer cancel()
	if _, err := t.js.AccountInfo(nats.Context(rctx)); err != nil {
		return fmt.Errorf("asking NATS JetStream: %w", err)
	}
	for _, topic := range t.cfg.Topics {
		if err := t.ensureStream(ctx, t.cfg.TopicPrefix+topic); err != nil {
			return err
		}
	}
	return nil
}

// natsStreamConfig is the stream the transport creates for subject; see
// newNATS for the choices.
func (t *natsTransport) natsStreamConfig(subject string) *nats.StreamConfig {
	return &nats.StreamConfig{
		Name:       NATSStream(subject),
		Subjects:   []string{subject},
		Retention:  nats.LimitsPolicy,
		Storage:    nats.FileStorage,
		Discard:    nats.DiscardOld,
		MaxAge:     t.cfg.NATSMaxAge,
		Duplicates: natsDuplicateWindow,
	}
}

// ensureStream creates the stream of subject unless it exists, and checks
// that an existing one takes subject. A stream that exists is left as it
// is: an operator may have tuned it. Subjects found once are not asked
// again.
func (t *natsTransport) ensureStream(ctx context.Context, subject string) error {
	t.mu.Lock()
	known := t.streams[subject]
	t.mu.Unlock()
	if known {
		return nil
	}
	ctx, cancel := requestContext(ctx)
	defer cancel()
	sc := t.natsStreamConfig(subject)
	info, err := t.js.AddStream(sc, nats.Context(ctx))
	if err != nil {
		// The stream may exist now: created before (the server answers
		// that its name is in use), or by a replica at the same moment
		// (it may answer that the subject overlaps an existing stream's).
		if existing, ierr := t.js.StreamInfo(sc.Name, nats.Context(ctx)); ierr == nil {
			info, err = existing, nil
		}
	}
	if err != nil {
		return fmt.Errorf("creating NATS stream %s: %w", sc.Name, err)
	}
	if !slices.Contains(info.Config.Subjects, subject) {
		return fmt.Errorf("NATS stream %s exists for subjects %v, not %s", sc.Name, info.Config.Subjects, subject)
	}
	t.mu.Lock()
	t.streams[subject] = true
	t.mu.Unlock()
	return nil
}

// ensureConsumer creates the durable push consumer of handler on the
// stream of subject, its ack pending cap fit for inFlight messages per
// replica (see natsMaxAckPending), or brings the ack wait and ack pending
// cap of an existing one to these: the subscription binds to the
// consumer by name and takes its settings as they are, so without this a
// service redeployed with a longer ack deadline would keep the old one.
// A replica creating the same consumer at the same time is not an error.
func (t *natsTransport) ensureConsumer(ctx context.Context, subject, handler string, inFlight int) error {
	ctx, cancel := requestContext(ctx)
	defer cancel()
	stream, durable := NATSStream(subject), t.cfg.NATSDurable(handler)
	want := nats.ConsumerConfig{
		Durable:        durable,
		Description:    "onceflow handler " + handler,
		DeliverSubject: nats.NewInbox(),
		DeliverGroup:   durable,
		DeliverPolicy:  nats.DeliverAllPolicy,
		AckPolicy:      nats.AckExplicitPolicy,
		AckWait:        t.cfg.AckDeadline,
		MaxAckPending:  max(natsMaxAckPending, natsAckPendingPerLane*inFlight),
		FilterSubject:  subject,
	}
	info, err := t.js.ConsumerInfo(stream, durable, nats.Context(ctx))
	if errors.Is(err, nats.ErrConsumerNotFound) {
		if _, err = t.js.AddConsumer(stream, &want, nats.Context(ctx)); err == nil {
			return nil
		}
		info, err = t.js.ConsumerInfo(stream, durable, nats.Context(ctx)) // created by a replica meanwhile?
	}
	if err != nil {
		return fmt.Errorf("creating NATS consumer %s on stream %s: %w", durable, stream, err)
	}
	have := info.Config
	if have.AckWait == want.AckWait && have.MaxAckPending == want.MaxAckPending {
		return nil
	}
	have.AckWait, have.MaxAckPending = want.AckWait, want.MaxAckPending
	if _, err := t.js.UpdateConsumer(stream, &have, nats.Context(ctx)); err != nil {
		return fmt.Errorf("updating NATS consumer %s on stream %s: %w", durable, stream, err)
	}
	return nil
}
