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
}

// newPoisonLog counts on reg, with the series of every topic in topics (the
// routes' consumed topics) at zero from the start.
func newPoisonLog(reg prometheus.Registerer, topics []string, logger *slog.Logger) (*poisonLog, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "onceflow_poisoned_messages_total",
		Help: "Messages parked in the poison topic, by the topic they came from.",
	}, []string{"topic"})
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	for _, topic := range topics {
		c.WithLabelValues(topic)
	}
	return &poisonLog{logger: logger, poisoned: c}, nil
}

func (p *poisonLog) handle(msg *message.Message) error {
	topic := msg.Metadata.Get(wmmw.PoisonedTopicKey)
	p.poisoned.WithLabelValues(topic).Inc()
	p.logger.Error("message poisoned",
		"message_uuid", msg.UUID,
		"topic", topic,
		"handler", msg.Metadata.Get(wmmw.PoisonedHandlerKey),
		"reason", msg.Metadata.Get(wmmw.ReasonForPoisonedKey))
	return nil
}
