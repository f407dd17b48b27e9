package poison

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Console is what an operator does with parked messages: list and show
// them, redrive them to their topic, discard them. Every redrive and
// discard is logged with its operator, never with a payload. It is safe
// for concurrent use.
type Console struct {
	// Store holds the parked messages. Required.
	Store Store
	// Publisher publishes redriven messages: the service's own, which signs
	// them when signing is on. Required.
	Publisher message.Publisher
	// Topics are the topics a message may be redriven to: those the
	// service's handlers consume. A parked message naming another (one
	// published straight to the poison topic, say) is refused.
	Topics []string
	// Logger receives a line per redrive and discard; nil discards.
	Logger *slog.Logger
	// Now is the clock of the settlements; nil: time.Now.
	Now func() time.Time
}

// RedrivenFromKey is the metadata field a redriven message carries: the
// ID it was parked under.
const RedrivenFromKey = "redriven_from"

// Errors of the Console's actions, besides the Store's.
var (
	// ErrRefused: the message cannot be redriven as it is; the error says
	// why, and whether force would do.
	ErrRefused = errors.New("redrive refused")
)

// Outcome is what one action did, or would do in a dry run.
type Outcome struct {
	Message Message `json:"message"`
	// Error is why the action was refused; empty when it was done.
	Error string `json:"error,omitempty"`
}

// Batch is what an action on many messages did.
type Batch struct {
	// Done counts the messages redriven or discarded (in a dry run: that
	// would be), Refused those left parked with their reason.
	Done    int       `json:"done"`
	Refused int       `json:"refused"`
	DryRun  bool      `json:"dry_run"`
	Items   []Outcome `json:"items"`
}

// MaxBatch is the most messages one batch action settles; a filter that
// selects more is settled a batch at a time.
const MaxBatch = 1000

// Redrive publishes the parked message id to its topic, with its UUID,
// metadata (less the poison queue's fields, plus RedrivenFromKey) and
// payload, and marks it redriven by by. It refuses, with ErrRefused, a
// message whose topic the service does not consume, and one poisoned for
// a reused key or a bad signature unless force: the first would be
// refused again while the first record lives, and the second is signed
// by this service once redriven. A message no longer parked is
// ErrSettled.
//
// It publishes first and marks second, so a failure between the two
// leaves the message parked; redriving it again sends a second copy,
// which the receiver answers as a duplicate.
func (c *Console) Redrive(ctx context.Context, id, by string, force bool) (Message, error) {
	m, err := c.Store.Get(ctx, id)
	if err != nil {
		return Message{}, err
	}
	return c.redrive(ctx, m, by, force)
}

func (c *Console) redrive(ctx context.Context, m Message, by string, force bool) (Message, error) {
	if err := c.Redrivable(m, force); err != nil {
		return m, err
	}
	msg := message.NewMessage(m.UUID, m.Payload)
	msg.Metadata = maps.Clone(m.Metadata)
	if msg.Metadata == nil {
		msg.Metadata = message.Metadata{}
	}
	for _, k := range poisonFields {
		delete(msg.Metadata, k)
	}
	msg.Metadata.Set(RedrivenFromKey, m.ID)
	msg.SetContext(ctx)
	if err := c.Publisher.Publish(m.Topic, msg); err != nil {
		return m, fmt.Errorf("publishing to %s: %w", m.Topic, err)
	}
	settled, err := c.Store.Settle(ctx, m.ID, Settlement{State: Redriven, By: by, At: c.now()})
	if err != nil {
		return settled, fmt.Errorf("published to %s, then marking it redriven: %w", m.Topic, err)
	}
	c.logger().InfoContext(ctx, "poisoned message redriven", "actor", by, "id", m.ID, "uuid", m.UUID,
		"topic", m.Topic, "handler", m.Handler, "class", m.Class, "key", m.Key, "force", force)
	return settled, nil
}

// Redrivable reports why m cannot be redriven (with force or not), nil if
// it can.
func (c *Console) Redrivable(m Message, force bool) error {
	switch {
	case m.State != Parked:
		return fmt.Errorf("%w: it was %s by %s", ErrSettled, m.State, m.SettledBy)
	case !slices.Contains(c.Topics, m.Topic):
		return fmt.Errorf("%w: its topic %q is none the service consumes", ErrRefused, m.Topic)
	case m.Metadata[TruncatedKey] != "":
		return fmt.Errorf("%w: only %d of its %s bytes were kept, so it cannot be sent as it came", ErrRefused, len(m.Payload), m.Metadata[TruncatedKey])
	case force:
		return nil
	case m.Class == KeyReused:
		return fmt.Errorf("%w: its key was used before with another payload, so it would be refused again "+
			"until that record expires; redrive it with force once it has", ErrRefused)
	case m.Class == BadSignature:
		return fmt.Errorf("%w: no trusted producer signed it, and a redrive signs it as this service; "+
			"redrive it with force only if you know where it came from", ErrRefused)
	}
	return nil
}

// Discard marks the parked message id discarded by by: it stays listed
// (state discarded) until its retention ends, and is never redriven.
func (c *Console) Discard(ctx context.Context, id, by string) (Message, error) {
	m, err := c.Store.Settle(ctx, id, Settlement{State: Discarded, By: by, At: c.now()})
	if err != nil {
		return m, err
	}
	c.logger().InfoContext(ctx, "poisoned message discarded", "actor", by, "id", m.ID, "uuid", m.UUID,
		"topic", m.Topic, "handler", m.Handler, "class", m.Class, "key", m.Key)
	return m, nil
}

// RedriveAll redrives the parked messages f selects (its State is
// ignored), at most MaxBatch of them, oldest page last; with dryRun it
// changes nothing and says what it would do.
func (c *Console) RedriveAll(ctx context.Context, f Filter, by string, force, dryRun bool) (Batch, error) {
	return c.each(ctx, f, dryRun, func(m Message) (Message, error) {
		if dryRun {
			return m, c.Redrivable(m, force)
		}
		return c.Redrive(ctx, m.ID, by, force) // List has no payload: Get it
	})
}

// DiscardAll discards the parked messages f selects, as RedriveAll.
func (c *Console) DiscardAll(ctx context.Context, f Filter, by string, dryRun bool) (Batch, error) {
	return c.each(ctx, f, dryRun, func(m Message) (Message, error) {
		if dryRun {
			return m, nil
		}
		return c.Discard(ctx, m.ID, by)
	})
}

// each applies do to the parked messages f selects, up to MaxBatch. A
// refusal (ErrRefused, ErrSettled: another operator was quicker) is
// counted and the walk goes on; any other error ends it.
func (c *Console) each(ctx context.Context, f Filter, dryRun bool, do func(Message) (Message, error)) (Batch, error) {
	f.State, f.Limit = Parked, MaxLimit
	b := Batch{DryRun: dryRun, Items: []Outcome{}}
	for len(b.Items) < MaxBatch {
		page, next, err := c.Store.List(ctx, f)
		if err != nil {
			return b, err
		}
		for _, m := range page {
			if len(b.Items) == MaxBatch {
				break
			}
			got, err := do(m)
			switch {
			case err == nil:
				b.Done++
				b.Items = append(b.Items, Outcome{Message: got})
			case errors.Is(err, ErrRefused) || errors.Is(err, ErrSettled):
				b.Refused++
				b.Items = append(b.Items, Outcome{Message: got, Error: err.Error()})
			default:
				return b, err
			}
		}
		if next == "" {
			break
		}
		f.After = next
	}
	return b, nil
}

func (c *Console) now() time.Time {
	if c.Now == nil {
		return time.Now().UTC()
	}
	return c.Now().UTC()
}

func (c *Console) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}
