package metrics

import (
	"log/slog"
	"strconv"
	"strings"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// PoisonLog reads a poison topic (a handler of it: [PoisonLog.Handle]): it
// logs every poisoned message at Error, with its reason, its topic and its
// handler (the metadata Watermill's PoisonQueue writes), and counts it in
//
//	onceflow_poisoned_messages_total{topic}  counter
//
// so that a parked message is seen, also on an in-process transport where
// nothing else would read it. On a broker the messages stay in the poison
// topic for other consumers and for replay.
type PoisonLog struct {
	logger   *slog.Logger
	poisoned *prometheus.CounterVec
	topics   map[string]bool // the label values: the routes' consumed topics
}

// otherTopic labels the poisoned messages whose topic_poisoned names none
// of the topics of NewPoisonLog.
const otherTopic = "other"

// NewPoisonLog is a PoisonLog logging to logger and counting on reg, with
// the series of every topic in topics (the topics the service's handlers
// consume) and of "other" at zero from the start: a message whose
// topic_poisoned names none of topics is counted as "other", since whoever
// can publish to the poison topic writes that header, and a label of their
// choosing per message would grow the metric without bound.
func NewPoisonLog(reg prometheus.Registerer, topics []string, logger *slog.Logger) (*PoisonLog, error) {
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
	return &PoisonLog{logger: logger, poisoned: c, topics: known}, nil
}

// Handle logs and counts msg; it never fails.
func (p *PoisonLog) Handle(msg *message.Message) error {
	topic := msg.Metadata.Get(wmmw.PoisonedTopicKey)
	label := topic
	if !p.topics[topic] {
		label = otherTopic
	}
	p.poisoned.WithLabelValues(label).Inc()
	p.logger.Error("message poisoned",
		"message_uuid", bounded(msg.UUID),
		"topic", bounded(topic),
		"handler", bounded(msg.Metadata.Get(wmmw.PoisonedHandlerKey)),
		"reason", bounded(msg.Metadata.Get(wmmw.ReasonForPoisonedKey)),
		"bytes", len(msg.Payload))
	return nil
}

// maxLogged is the most of a poisoned message's field a log line quotes:
// whoever can publish to the poison topic writes them.
const maxLogged = 512

// bounded is s, cut to maxLogged bytes (on a rune's boundary) with what
// was cut said.
func bounded(s string) string {
	if len(s) <= maxLogged {
		return s
	}
	return strings.ToValidUTF8(s[:maxLogged], "") + "… (" + strconv.Itoa(len(s)) + " bytes)" // the cut rune dropped
}
