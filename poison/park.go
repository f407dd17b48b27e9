package poison

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Parker parks the messages of the poison topic: its Handle is that
// topic's handler. A message is acknowledged once it is parked; one that
// cannot be (a full store, a store outage) is not, and comes back after
// Backoff: nothing poisoned is dropped.
type Parker struct {
	// Store keeps the messages. Required.
	Store Store
	// Now is the clock of ParkedAt; nil: time.Now.
	Now func() time.Time
	// Backoff is how long a message that could not be parked is held
	// before it is handed back to the broker, so that a full store is not
	// asked again in a loop. Default DefaultBackoff.
	Backoff time.Duration
	// Parked, when set, is called after each attempt with its outcome:
	// "parked", "full" or "error".
	Parked func(outcome string)
	// MaxPayload, when positive, is the most of a payload kept: a longer
	// one is cut, its length noted in metadata TruncatedKey, and the
	// message can be looked at but not redriven. Set it well below the
	// store's MaxBytes, so that any message fits an empty store.
	MaxPayload int
}

// TruncatedKey is the metadata field of a parked message whose payload
// was cut (Parker.MaxPayload): the length it had.
const TruncatedKey = "onceflow_payload_bytes"

// DefaultBackoff is Parker.Backoff by default.
const DefaultBackoff = time.Second

// Handle parks msg, or returns why it could not after Backoff (or once
// msg's context ends).
func (p *Parker) Handle(msg *message.Message) error {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	m := FromMessage(msg, now())
	if p.MaxPayload > 0 && len(m.Payload) > p.MaxPayload {
		m.Metadata[TruncatedKey] = strconv.Itoa(len(m.Payload))
		m.Payload = m.Payload[:p.MaxPayload]
	}
	_, err := p.Store.Park(msg.Context(), m)
	outcome := "parked"
	switch {
	case err == nil:
	case errors.Is(err, ErrFull):
		outcome = "full"
	default:
		outcome = "error"
	}
	if p.Parked != nil {
		p.Parked(outcome)
	}
	if err == nil {
		return nil
	}
	backoff := p.Backoff
	if backoff == 0 {
		backoff = DefaultBackoff
	}
	t := time.NewTimer(backoff)
	defer t.Stop()
	select {
	case <-t.C:
	case <-msg.Context().Done():
	}
	return fmt.Errorf("parking poisoned message %s: %w", msg.UUID, err)
}
