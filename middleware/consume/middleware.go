package consume

import (
	"context"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/internal/unguarded"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores"
)

// Option configures [Middleware].
type Option func(*messageOptions)

type messageOptions struct {
	key         KeyFunc
	fingerprint FingerprintFunc
	outbox      Outbox
}

// Outbox writes the messages a handler produced within the context the
// handler ran in: in transaction mode that context carries the unit of
// work, so the messages commit or roll back with the handler's effects and
// its record (the transactional outbox). handler names the handler, so that
// the Outbox knows their topic. Package exactlyonce has the PostgreSQL one,
// on watermill-sql.
type Outbox func(ctx context.Context, handler string, msgs []*message.Message) error

// WithOutbox makes the middleware write produced messages through o, inside
// [receiver.Receiver.Execute], and return none to the router, which then
// publishes nothing: a duplicate replays nothing either, since its
// messages were committed with its record. Use it with a Receiver in
// transaction mode; in lease mode the
// messages would be written before the record is completed. Default: none,
// the router publishes the returned messages.
func WithOutbox(o Outbox) Option {
	return func(opts *messageOptions) { opts.outbox = o }
}

// WithKey sets how the idempotency key is derived. Default
// KeyFromMetadata(MetadataKey): metadata idempotency_key, else the UUID.
func WithKey(f KeyFunc) Option {
	return func(o *messageOptions) { o.key = f }
}

// WithFingerprint sets how the fingerprint is derived. Default
// PayloadFingerprint, the SHA-256 of the payload.
func WithFingerprint(f FingerprintFunc) Option {
	return func(o *messageOptions) { o.fingerprint = f }
}

// Middleware is the Watermill face of r: a handler middleware that runs
// the handler at most once per idempotency key and handler.
//
// The scope is the handler name ([message.HandlerNameFromCtx]), so two
// handlers on one topic each process a message once. A handler named
// "http" would share the HTTP face's records: its messages fail with
// [receiver.ErrNoKey], which is Permanent. The handler runs with the
// fencing token in msg.Context() (see [receiver.TokenFromContext]) and the
// run's effect keys ([receiver.EffectKey]); the context is cancelled if
// the lease is lost.
//
//   - First delivery: the handler's produced messages are stored as the
//     result and returned, for the router to publish.
//   - Handler error: the claim is released and the error returned, so the
//     message is nacked and its redelivery processed.
//   - Duplicate: the handler does not run; the stored produced messages are
//     returned with their original UUIDs and metadata idempotent_replayed=
//     true, with a nil error. The router publishes them again and acks, so a
//     crash between completing the record and publishing loses nothing
//     downstream (consumers deduplicate the replay by UUID).
//   - In progress: [receiver.ErrInProgress] (Reject policy), so the
//     message is nacked.
//   - Fingerprint mismatch: an error wrapping
//     [receiver.ErrFingerprintMismatch] whose
//     text contains "fingerprint_mismatch". It is Permanent: register the
//     retry middleware with ShouldRetry: !Permanent(err) and the poison queue
//     with PoisonQueueWithFilter(pub, topic, Permanent), outside this one.
//
// It must be innermost, right around the handler: recoverer -> poison
// queue -> retry -> timeout -> this -> handler. A middleware between it
// and the handler that turns a failure into a success would have it
// complete the record of an effect that did not happen. The lease must
// exceed the timeout. [Install] registers it so, with the rest of that
// order, and keeps it there whatever else the router is given.
func Middleware(r *receiver.Receiver, opts ...Option) message.HandlerMiddleware {
	if r == unguarded.Receiver() {
		return func(h message.HandlerFunc) message.HandlerFunc { return h }
	}
	o := messageOptions{key: KeyFromMetadata(MetadataKey), fingerprint: PayloadFingerprint}
	for _, opt := range opts {
		opt(&o)
	}
	obs := r.Config().Observer
	return func(h message.HandlerFunc) message.HandlerFunc {
		m := &messageHandler{r: r, obs: obs, o: o, h: h}
		return func(msg *message.Message) ([]*message.Message, error) {
			// Each message has a goroutine of its own: grow its stack
			// before handle's frame is on it, so there is less to copy.
			growStack()
			return m.handle(msg)
		}
	}
}

// messageHandler is the Watermill face of the receiver around one handler.
type messageHandler struct {
	r   *receiver.Receiver
	obs receiver.Observer // the receiver's, told the replays
	o   messageOptions
	h   message.HandlerFunc
}

// httpScope is the scope of the HTTP face's records (package
// idempotencykey's Scope), which no handler may take.
const httpScope = "http"

// shown is a key as the receiver shows it in errors: as the stores keep it
// ([stores.StorageKey]), so a long or binary key becomes its short hash.
func shown(key string) string {
	s, _ := stores.StorageKey(key) // fails only for "", shown as ""
	return s
}

// handle runs m's handler for msg under the receiver, as Middleware says.
func (m *messageHandler) handle(msg *message.Message) ([]*message.Message, error) {
	r, o, h := m.r, &m.o, m.h
	key, err := o.key(msg)
	if err != nil {
		return nil, fmt.Errorf("message %s: %w", msg.UUID, err)
	}
	outer := msg.Context()
	defer msg.SetContext(outer) // middlewares outside retry with it
	scope := message.HandlerNameFromCtx(outer)
	if scope == httpScope {
		// Its keys would name the HTTP face's records.
		return nil, fmt.Errorf("message %s: handler %q: %w: the name is the HTTP face's scope", msg.UUID, scope, receiver.ErrNoKey)
	}
	var produced []*message.Message
	res, err := r.Execute(outer, scope, key, o.fingerprint(msg),
		func(ctx context.Context) ([]byte, error) {
			msg.SetContext(ctx)
			out, err := h(msg)
			if err != nil {
				return nil, err
			}
			if o.outbox == nil {
				produced = out
				if len(out) == 0 {
					return nil, nil // the empty result: no messages to replay
				}
				return encodeMessages(out) // replayed on duplicates
			}
			// The outputs commit with the record; nothing replays them.
			if len(out) > 0 {
				if err := o.outbox(ctx, scope, out); err != nil {
					return nil, fmt.Errorf("writing produced messages to the outbox: %w", err)
				}
			}
			return nil, nil
		})
	if err != nil {
		return nil, err
	}
	if res.Outcome == receiver.OutcomeDuplicate && o.outbox == nil {
		replay, err := decodeMessages(res.Value)
		if err != nil {
			return nil, fmt.Errorf("replaying key %q: %w", shown(key), err)
		}
		m.obs.Replayed(scope, len(replay))
		return replay, nil
	}
	return produced, nil
}
