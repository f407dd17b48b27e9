package app

import (
	"log/slog"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// poisonLogHandler names the handler that reads the poison topic.
const poisonLogHandler = "poison_log"

// poisonLog reads the poison topic: it logs every poisoned message with its
// reason and counts it, so that a parked message is seen, also on the
// in-process transport where nothing else would read it. On a broker the
// messages stay in the poison topic for other consumers and for replay.
type poisonLog struct {
	logger   *slog.Logger
	poisoned *prometheus.CounterVec
	topics   map[string]bool // the label values: the routes' consumed topics
}

// otherTopic labels the poisoned messages whose topic_poisoned names no
// topic the routes consume: whoever can publish to the poison topic
// writes that header, and a label of their choosing per message would
// grow the metric without bound.
const otherTopic = "other"

// newPoisonLog counts on reg, with the series of every topic in topics (the
// routes' consumed topics) and of otherTopic at zero from the start.
func newPoisonLog(reg prometheus.Registerer, topics []string, logger *slog.Logger) (*poisonLog, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "onceflow_poisoned_messages_total",
		Help: "Messages parked in the poison topic, by the topic they came from (\"" + otherTopic + "\": none the service consumes).",
	}, []string{"topic"})
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, topic := range topics {
		known[topic] = true
		c.WithLabelValues(topic)
	}
	c.WithLabelValues(otherTopic)
	return &poisonLog{logger: logger, poisoned: c, topics: known}, nil
}

func (p *poisonLog) handle(msg *message.Message) error {
	topic := msg.Metadata.Get(wmmw.PoisonedTopicKey)
	label := topic
	if !p.topics[topic] {
		label = otherTopic
	}
	p.poisoned.WithLabelValues(label).Inc()
	p.logger.Error("message poisoned",
		"message_uuid", msg.UUID,
		"topic", topic,
		"handler", msg.Metadata.Get(wmmw.PoisonedHandlerKey),
		"reason", msg.Metadata.Get(wmmw.ReasonForPoisonedKey))
	return nil
}
