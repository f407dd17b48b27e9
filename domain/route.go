package domain

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Route is one message handler as the application wires it: from a route
// alone it subscribes the handler's own consumer group (or queue) to
// Consumes, registers it on the router behind the idempotent receiver,
// creates its topics on Kafka, sends what it returns to Produces (through
// the outbox in DEDUP_MODE=transaction) and labels its metrics with Name.
//
// A route has exactly one of Handle and Consume: Handle for a handler that
// returns messages, which then needs Produces; Consume for one that returns
// none, which the compiler then holds to it. [Routes.Validate] checks the
// rest at start-up.
type Route struct {
	// Name names the handler: it scopes the handler's idempotency keys
	// (renaming a route makes every message it processed look new), and
	// names its consumer group and its metric label. Lower-case letters,
	// digits and underscores, starting with a letter; not "http", the
	// scope of the HTTP face's records (package idempotencykey's Scope).
	Name string
	// Consumes is the topic the handler reads.
	Consumes string
	// Produces is the topic of the messages Handle returns.
	Produces string
	// Handle is a handler that returns messages for Produces.
	Handle message.HandlerFunc
	// Consume is a handler that returns none.
	Consume message.NoPublishHandlerFunc

	// Key derives a message's idempotency key; it must be deterministic:
	// every copy of a message must yield the same key. Default: metadata
	// idempotency_key, else the message UUID (package consume's
	// KeyFromMetadata(MetadataKey)). A key that spans several fields (a
	// tenant and an order id, say) is a consume.CompositeKey. It is a
	// consume.KeyFunc.
	Key func(*message.Message) (string, error)
	// Fingerprint derives what a key stands for: the same key with another
	// fingerprint is a reused key and goes to the poison topic. Default
	// the SHA-256 of the payload (consume.PayloadFingerprint). It is a
	// consume.FingerprintFunc.
	Fingerprint func(*message.Message) []byte
	// Timeout bounds one attempt of the handler. Default HANDLER_TIMEOUT;
	// like it, it must be shorter than DEDUP_LEASE, which the service
	// checks at start-up.
	Timeout time.Duration
	// Concurrency is how many messages the handler holds in flight at
	// once, per replica; they complete in any order (on Kafka, in order
	// within a key). Default (0) HANDLER_CONCURRENCY; 1 handles one
	// message at a time per replica, for a handler whose work must not
	// overlap.
	Concurrency int
	// Mode is the route's own DEDUP_MODE: ModeLease for a handler whose
	// effect is a call to another system (made once with effect keys),
	// ModeTransaction for one whose effect is a write to the service's
	// database, which then commits with the message's record. Default
	// (empty) DEDUP_MODE. Transaction mode needs STORE=postgres, which
	// the service checks at start-up.
	Mode Mode
	// Requeue, when set, sends a message whose attempt failed for a reason
	// that may pass (not a permanent error) back through the broker after
	// Requeue.Delay, once the in-process retries (RETRY_MAX) are spent,
	// so that the handler goes on with the next message meanwhile; after
	// Requeue.Max requeues it is poisoned (class retries_exhausted). Nil:
	// the broker redelivers a failed message at once.
	Requeue *Requeue
}

// Requeue is how a route's failed messages are requeued (Route.Requeue).
type Requeue struct {
	// Delay is how long a failed message waits, to the second.
	Delay time.Duration
	// Max is how many times it is requeued before it is poisoned.
	Max int
}

// Mode is how a route's handler runs at most once (Route.Mode).
type Mode string

// The modes, as DEDUP_MODE spells them.
const (
	// ModeLease claims the key with a lease and a heartbeat, runs the
	// handler, then completes the record: the effect and the record are
	// two steps.
	ModeLease Mode = "lease"
	// ModeTransaction claims, runs and completes in one PostgreSQL
	// transaction that the handler's writes join.
	ModeTransaction Mode = "transaction"
)

// Routes is a service's message handlers, the one list the application
// loops over.
type Routes []Route

// httpScope is the scope of the HTTP face's records, package
// idempotencykey's Scope, which no route may take.
const httpScope = "http"

// routeName is what a route's Name may be: it becomes part of consumer
// group, queue and metric names, and of every idempotency key, where a ":"
// would blur the scope.
var routeName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Validate reports every route that cannot be wired: a name that is
// missing, malformed, reserved or used twice, a missing topic, a route with neither
// or both of Handle and Consume, a Handle without Produces, a negative
// Timeout or Concurrency, or an unknown Mode.
func (rs Routes) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for i, r := range rs {
		what := fmt.Sprintf("route %d (%q)", i, r.Name)
		switch {
		case !routeName.MatchString(r.Name):
			errs = append(errs, fmt.Errorf("%s: the name must be 1 to 63 lower-case letters, digits or underscores, starting with a letter", what))
		case r.Name == httpScope:
			// Its records would share the HTTP face's scope: a producer's
			// idempotency_key could name an HTTP client's record.
			errs = append(errs, fmt.Errorf("%s: the name is the scope of the HTTP face's records", what))
		case seen[r.Name]:
			errs = append(errs, fmt.Errorf("%s: the name is already used by another route", what))
		}
		seen[r.Name] = true
		if r.Consumes == "" {
			errs = append(errs, fmt.Errorf("%s: Consumes names no topic", what))
		}
		switch {
		case (r.Handle == nil) == (r.Consume == nil):
			errs = append(errs, fmt.Errorf("%s: set exactly one of Handle (returns messages) and Consume (returns none)", what))
		case r.Handle != nil && r.Produces == "":
			errs = append(errs, fmt.Errorf("%s: Handle returns messages, so Produces must name their topic", what))
		case r.Consume != nil && r.Produces != "":
			errs = append(errs, fmt.Errorf("%s: Consume returns no messages, so Produces must be empty", what))
		}
		if r.Timeout < 0 {
			errs = append(errs, fmt.Errorf("%s: Timeout %v is negative: leave it 0 for HANDLER_TIMEOUT", what, r.Timeout))
		}
		if r.Concurrency < 0 {
			errs = append(errs, fmt.Errorf("%s: Concurrency %d is negative: leave it 0 for HANDLER_CONCURRENCY", what, r.Concurrency))
		}
		if q := r.Requeue; q != nil && (q.Delay < time.Second || q.Max < 1) {
			errs = append(errs, fmt.Errorf("%s: Requeue needs a Delay of 1s or more (%v) and a Max of 1 or more (%d)", what, q.Delay, q.Max))
		}
		if r.Mode != "" && r.Mode != ModeLease && r.Mode != ModeTransaction {
			errs = append(errs, fmt.Errorf("%s: Mode %q is not %q or %q: leave it empty for DEDUP_MODE", what, r.Mode, ModeLease, ModeTransaction))
		}
	}
	return errors.Join(errs...)
}

// Outputs maps the name of each route that produces messages to their
// topic.
func (rs Routes) Outputs() map[string]string {
	out := map[string]string{}
	for _, r := range rs {
		if r.Produces != "" {
			out[r.Name] = r.Produces
		}
	}
	return out
}

// Names lists the routes' names, which are their handlers' names, in order.
func (rs Routes) Names() []string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name
	}
	return names
}

// Topics lists every topic the routes consume or produce, once each, in the
// order they first appear.
func (rs Routes) Topics() []string {
	var topics []string
	seen := map[string]bool{}
	for _, r := range rs {
		for _, t := range []string{r.Consumes, r.Produces} {
			if t != "" && !seen[t] {
				seen[t] = true
				topics = append(topics, t)
			}
		}
	}
	return topics
}

// Requeue reports whether a route requeues its failed messages.
func (rs Routes) Requeue() bool {
	for _, r := range rs {
		if r.Requeue != nil {
			return true
		}
	}
	return false
}
