package nats

import (
	"fmt"
	"strings"

	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/components/requeuer"
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
	nm.Header.Set(nats.MsgIdHdr, m.msgID(topic, msg))
	return nm, nil
}

// msgID is the message's idempotency key, or else its UUID — the key the
// receiver uses. A message parked in the poison topic (it carries
// watermill's "topic_poisoned" entry) is identified by its UUID instead:
// the same message poisoned twice (redelivered after a crash) is dropped
// the second time, while two different messages of one key that were both
// poisoned are both kept for whoever inspects the poison topic. A
// redriven message (it carries redrivenFromKey, the id it was parked
// under) is identified by that id and its UUID: it is the service sending
// a key again on purpose, often within the window of the key's first
// publish, which would drop it — parked messages marked redriven that no
// handler ever gets — while a second redrive of one parked message (a
// redrive that published, then failed to mark it) is still dropped. A
// requeued message (it carries requeueTopicKey) is identified by the
// topic it goes to, its count of requeues and its UUID: each hop, to the
// requeue topic and back, is a publish of its own, and a copy of one hop
// is still dropped.
func (m marshaler) msgID(topic string, msg *message.Message) string {
	if from := msg.Metadata.Get(redrivenFromKey); from != "" {
		return "redriven:" + from + ":" + msg.UUID
	}
	if msg.Metadata.Get(requeueTopicKey) != "" {
		return "requeue:" + topic + ":" + msg.Metadata.Get(requeuer.RetriesKey) + ":" + msg.UUID
	}
	if key := msg.Metadata.Get(m.keyEntry); key != "" && msg.Metadata.Get(wmmw.PoisonedTopicKey) == "" {
		return key
	}
	return msg.UUID
}

// redrivenFromKey is the metadata entry of a redriven message:
// poison.RedrivenFromKey, which this package does not import (the test
// checks that they agree).
const redrivenFromKey = "redriven_from"

// requeueTopicKey is the metadata entry of a requeued message:
// consume.RequeueTopicKey, which this package does not import either.
const requeueTopicKey = "requeue_topic"

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
