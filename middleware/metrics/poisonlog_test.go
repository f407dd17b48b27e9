package metrics

import (
	"log/slog"
	"strconv"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The poison counter's topic label is a topic the routes consume, or
// "other": a message published straight to the poison topic, with any
// topic_poisoned it likes, adds no series.
func TestPoisonCounterLabelsOnlyKnownTopics(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := NewPoisonLog(reg, []string{"orders.placed", "orders.paid"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	poison := func(topic string) {
		msg := message.NewMessage("uuid", nil)
		msg.Metadata.Set(wmmw.PoisonedTopicKey, topic)
		if err := p.Handle(msg); err != nil {
			t.Fatal(err)
		}
	}
	poison("orders.placed")
	for i := range 100 {
		poison("made-up-" + strconv.Itoa(i))
	}
	if n := testutil.CollectAndCount(p.poisoned); n != 3 {
		t.Errorf("%d series, want 3: the two consumed topics and %q", n, otherTopic)
	}
	for topic, want := range map[string]float64{"orders.placed": 1, "orders.paid": 0, otherTopic: 100} {
		if got := testutil.ToFloat64(p.poisoned.WithLabelValues(topic)); got != want {
			t.Errorf("topic %q: %v, want %v", topic, got, want)
		}
	}
}
