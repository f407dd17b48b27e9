package broker

import (
	"fmt"
	"time"
)

// Defaults that [Redelivery.WithDefaults] fills in for zero fields.
const (
	DefaultAckDeadline    = 30 * time.Second
	DefaultResendInterval = time.Second
)

// Redelivery is when a broker that redelivers by time (PostgreSQL,
// NATS JetStream, Redis Streams) hands a message out again. Each broker's
// Config embeds it; its package doc says how the broker keeps it.
type Redelivery struct {
	// AckDeadline is how long a delivered message may stay
	// unacknowledged before it is delivered again, to the same consumer or
	// another of its group. It should outlast everything a consumer does
	// with one delivery, retries included.
	AckDeadline time.Duration
	// ResendInterval is the pause before a nacked message is handed out
	// again.
	ResendInterval time.Duration
}

// WithDefaults returns r with its zero fields filled.
func (r Redelivery) WithDefaults() Redelivery {
	if r.AckDeadline == 0 {
		r.AckDeadline = DefaultAckDeadline
	}
	if r.ResendInterval == 0 {
		r.ResendInterval = DefaultResendInterval
	}
	return r
}

// Validate reports a negative ack deadline or resend interval (zero takes
// the default).
func (r Redelivery) Validate() error {
	if r.AckDeadline < 0 || r.ResendInterval < 0 {
		return fmt.Errorf("ack deadline %v, resend interval %v: want each more than 0", r.AckDeadline, r.ResendInterval)
	}
	return nil
}
