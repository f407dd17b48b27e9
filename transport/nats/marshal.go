package nats

import (
	"fmt"
	"strings"

	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/nats-io/nats.go"
)

// marshaler is watermill-nats's NATSMarshaler (the payload as the
// body, the UUID in header _watermill_message_uuid, each metadata entry a
// header of its own) with the JetStream message id added on the way out,
// and on the way in a reading that never fails.
type marshaler struct {
	// keyEntry is the metadata entry holding the idempotency key.
	keyEntry string
}

// Marshal sets header Nats-Msg-Id to msgID(msg), so that the stream
// drops a copy published again within its duplicate window.
func (m marshaler) Marshal(topic string, msg *message.Message) (*nats.Msg, error) {
	nm, err := (&wmnats.NATSMarshaler{}).Marshal(topic, msg)
	if err != nil {
		return nil, err
	}
	nm.Header.Set(nats.MsgIdHdr, m.msgID(msg))
	return nm, nil
}

// msgID is the message's idempotency key, or else its UUID — the key the
// receiver uses. A message parked in the poison topic (it carries
// watermill's "topic_poisoned" entry) is identified by its UUID instead:
// the same message poisoned twice (redelivered after a crash) is dropped
// the second time, while two different messages of one key that were both
// poisoned are both kept for whoever inspects the poison topic.
func (m marshaler) msgID(msg *message.Message) string {
	if key := msg.Metadata.Get(m.keyEntry); key != "" && msg.Metadata.Get(wmmw.PoisonedTopicKey) == "" {
		return key
	}
	return msg.UUID
}

// Unmarshal reads what Marshal wrote, and messages of other producers:
// every header but the Watermill UUID and NATS's own (Nats-*) becomes a
// metadata entry, a header sent more than once holding its values joined
// by ", " (watermill-nats refuses such a message, and since its subscriber
// then neither acks nor nacks it, the server would redeliver it at every
// ack wait, forever). A message without a UUID header takes its
// Nats-Msg-Id, or else stream:sequence, so that every redelivery of it has
// the same UUID.
func (m marshaler) Unmarshal(nm *nats.Msg) (*message.Message, error) {
	md := make(message.Metadata, len(nm.Header))
	for k, v := range nm.Header {
		if k == wmnats.WatermillUUIDHdr || strings.HasPrefix(k, "Nats-") {
			continue
		}
		md.Set(k, strings.Join(v, ", "))
	}
	id := nm.Header.Get(wmnats.WatermillUUIDHdr)
	if id == "" {
		id = nm.Header.Get(nats.MsgIdHdr)
	}
	if id == "" {
		if meta, err := nm.Metadata(); err == nil {
			id = fmt.Sprintf("%s:%d", meta.Stream, meta.Sequence.Stream)
		}
	}
	msg := message.NewMessage(id, nm.Data)
	msg.Metadata = md
	return msg, nil
}
