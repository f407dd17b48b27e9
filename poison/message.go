package poison

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ThreeDotsLabs/watermill/components/delay"
	"github.com/ThreeDotsLabs/watermill/components/requeuer"
	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/middleware/consume"
)

// Message is a parked poisoned message: the message as its handler got
// it, with why and when it was parked.
type Message struct {
	// ID names the parked message, as its Store chose: List orders by
	// parking order, not by comparing IDs.
	ID string `json:"id"`
	// UUID is the message's own UUID.
	UUID string `json:"uuid"`
	// Topic is the topic the message came on (without the broker prefix),
	// the one a redrive publishes it to.
	Topic string `json:"topic"`
	// Handler is the handler that poisoned it.
	Handler string `json:"handler"`
	// Reason is the error that poisoned it.
	Reason string `json:"reason"`
	// Class is the kind of that error, one of the Class constants.
	Class Class `json:"class"`
	// Key is the message's idempotency key (metadata idempotency_key),
	// empty when it had none.
	Key string `json:"key,omitempty"`
	// Metadata is the message's metadata as it was poisoned, the poison
	// queue's own fields included.
	Metadata map[string]string `json:"metadata"`
	// Payload is the message's payload. It is shown to operators only and
	// never logged.
	Payload []byte `json:"payload"`
	// ParkedAt is when it was parked.
	ParkedAt time.Time `json:"parked_at"`
	// State is Parked until the message is redriven or discarded.
	State State `json:"state"`
	// SettledBy is the operator who redrove or discarded it, SettledAt
	// when; empty while it is parked.
	SettledBy string     `json:"settled_by,omitempty"`
	SettledAt *time.Time `json:"settled_at,omitempty"`
}

// Size is what m counts against a store's byte bound: its payload,
// metadata and reason.
func (m Message) Size() int {
	n := len(m.Payload) + len(m.Reason) + len(m.Topic) + len(m.Handler) + len(m.Key) + len(m.UUID)
	for k, v := range m.Metadata {
		n += len(k) + len(v)
	}
	return n
}

// State is where a parked message is in its life.
type State string

// The states of a parked message.
const (
	Parked    State = "parked"
	Redriven  State = "redriven"
	Discarded State = "discarded"
)

// Class is the kind of error that poisoned a message.
type Class string

// The classes, as package consume's poison queue writes them in metadata
// ClassKey.
const (
	// Malformed: the payload does not decode. Redrive it once the handler
	// reads it (a bug fixed), or discard it.
	Malformed Class = consume.ClassMalformed
	// BadSignature: no trusted producer signed it for its topic, or it was
	// signed too long ago. Redriven only with force: the service signs
	// what it redrives.
	BadSignature Class = consume.ClassBadSignature
	// KeyReused: its idempotency key was used before with another
	// payload. Redriven only with force: it would be refused again until
	// the first record expires.
	KeyReused Class = consume.ClassKeyReused
	// TooLarge: its payload is over the service's limit.
	TooLarge Class = consume.ClassTooLarge
	// RetriesExhausted: it failed, for a reason that may pass, after every
	// requeue its route allows (domain.Route.Requeue). Redrive it once the
	// dependency is back.
	RetriesExhausted Class = consume.ClassRetriesExhausted
	// Permanent: another error that redelivery cannot fix (no key, an
	// unreadable stored result, a domain's permanent error).
	Permanent Class = consume.ClassPermanent
)

// Classes are every Class, in the order an operator reads them.
var Classes = []Class{Malformed, RetriesExhausted, Permanent, KeyReused, BadSignature, TooLarge}

// Metadata fields of a poisoned message: Watermill's poison queue writes
// the reason, topic and handler; package consume's adds the class.
const (
	ReasonKey  = wmmw.ReasonForPoisonedKey
	TopicKey   = wmmw.PoisonedTopicKey
	HandlerKey = wmmw.PoisonedHandlerKey
	ClassKey   = consume.PoisonClassKey
	// KeyKey is the idempotency key's field.
	KeyKey = consume.MetadataKey
)

// poisonFields are the fields the poison queue and the requeue add,
// dropped on redrive: a redriven message starts its requeues afresh.
var poisonFields = []string{ReasonKey, TopicKey, HandlerKey, ClassKey, wmmw.PoisonedSubscriberKey,
	consume.RequeueTopicKey, requeuer.RetriesKey, delay.DelayedUntilKey, delay.DelayedForKey}

// FromMessage is the parked form of msg as the poison topic's reader got
// it, parked at now. A message published straight to the poison topic may
// lack any field; its class is then Permanent. Its UUID and metadata are
// made text every store can hold (valid UTF-8 without NUL, each invalid
// byte and NUL replaced by U+FFFD); the payload is kept as it is.
func FromMessage(msg *message.Message, now time.Time) Message {
	md := make(map[string]string, len(msg.Metadata))
	for k, v := range msg.Metadata { // every store holds text: valid UTF-8, no NUL
		md[text(k)] = text(v)
	}
	class := Class(md[ClassKey])
	if !knownClass(class) {
		class = Permanent
	}
	return Message{UUID: text(msg.UUID), Topic: md[TopicKey], Handler: md[HandlerKey], Reason: cut(md[ReasonKey], maxReason),
		Class: class, Key: md[KeyKey], Metadata: md, Payload: append([]byte(nil), msg.Payload...),
		ParkedAt: now.UTC(), State: Parked}
}

func knownClass(c Class) bool {
	for _, k := range Classes {
		if c == k {
			return true
		}
	}
	return false
}

// ParseClass returns the Class named s, or an error listing them.
func ParseClass(s string) (Class, error) {
	if c := Class(s); knownClass(c) {
		return c, nil
	}
	names := make([]string, len(Classes))
	for i, c := range Classes {
		names[i] = string(c)
	}
	return "", fmt.Errorf("class %q is not one of %s", s, strings.Join(names, ", "))
}

// ParseState returns the State named s, or an error listing them.
func ParseState(s string) (State, error) {
	switch st := State(s); st {
	case Parked, Redriven, Discarded:
		return st, nil
	}
	return "", fmt.Errorf("state %q is not one of parked, redriven, discarded", s)
}

// text is s as valid UTF-8 without NUL.
func text(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// maxReason is the most of a reason a parked message keeps apart from its
// metadata (which has it whole): an error may quote what it refused.
const maxReason = 2048

// cut is s cut to n bytes on a rune's boundary, with an ellipsis when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// PayloadText is m's payload as an operator reads it: as it is when it is
// text, else "(binary, base64) " and its base64.
func (m Message) PayloadText() string {
	if utf8.Valid(m.Payload) {
		return string(m.Payload)
	}
	return "(binary, base64) " + base64.StdEncoding.EncodeToString(m.Payload)
}

// Clip is s cut to n runes, the last an ellipsis when it is cut: a reason
// on one line of a table.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
