package nats

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"

	"github.com/onceflow/onceflow/transport/broker"
)

// createStreams creates the streams of [Config.Topics] at start-up, within
// ctx, after checking that the server has JetStream.
func (t *transport) createStreams(ctx context.Context) error {
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

// streamConfig is the stream the transport creates for subject; see
// New for the choices.
func (t *transport) streamConfig(subject string) *nats.StreamConfig {
	return &nats.StreamConfig{
		Name:       broker.NATSStream(subject),
		Subjects:   []string{subject},
		Retention:  nats.LimitsPolicy,
		Storage:    nats.FileStorage,
		Discard:    nats.DiscardOld,
		MaxAge:     t.cfg.MaxAge,
		Duplicates: duplicateWindow,
	}
}

// ensureStream creates the stream of subject unless it exists, and checks
// that an existing one takes subject. A stream that exists is left as it
// is: an operator may have tuned it. Subjects found once are not asked
// again.
func (t *transport) ensureStream(ctx context.Context, subject string) error {
	t.mu.Lock()
	known := t.streams[subject]
	t.mu.Unlock()
	if known {
		return nil
	}
	ctx, cancel := requestContext(ctx)
	defer cancel()
	sc := t.streamConfig(subject)
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
// replica (see maxAckPending), or brings the ack wait and ack pending
// cap of an existing one to these: the subscription binds to the
// consumer by name and takes its settings as they are, so without this a
// service redeployed with a longer ack deadline would keep the old one.
// A replica creating the same consumer at the same time is not an error.
func (t *transport) ensureConsumer(ctx context.Context, subject, handler string, inFlight int) error {
	ctx, cancel := requestContext(ctx)
	defer cancel()
	stream, durable := broker.NATSStream(subject), t.cfg.names().NATSDurable(handler)
	want := nats.ConsumerConfig{
		Durable:        durable,
		Description:    "onceflow handler " + handler,
		DeliverSubject: nats.NewInbox(),
		DeliverGroup:   durable,
		DeliverPolicy:  nats.DeliverAllPolicy,
		AckPolicy:      nats.AckExplicitPolicy,
		AckWait:        t.cfg.AckDeadline,
		MaxAckPending:  max(maxAckPending, ackPendingPerLane*inFlight),
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
