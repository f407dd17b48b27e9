package metrics

import (
	"log/slog"
	"strconv"
	"strings"
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

// A poisoned message's fields are quoted in its log line up to a bound,
// with its size: whoever publishes to the poison topic writes them.
func TestPoisonLogBoundsWhatItQuotes(t *testing.T) {
	var b strings.Builder
	p, err := NewPoisonLog(prometheus.NewRegistry(), nil, slog.New(slog.NewTextHandler(&b, nil)))
	if err != nil {
		t.Fatal(err)
	}
	msg := message.NewMessage("uuid", make([]byte, 3<<20))
	msg.Metadata.Set(wmmw.ReasonForPoisonedKey, strings.Repeat("é", 1<<20))
	if err := p.Handle(msg); err != nil {
		t.Fatal(err)
	}
	if n := b.Len(); n > 4*maxLogged || !strings.Contains(b.String(), "(2097152 bytes)") || !strings.Contains(b.String(), "bytes=3145728") {
		t.Fatalf("logged %d bytes: %.300s…; want the reason cut to %d bytes, with its size and the payload's", n, b.String(), maxLogged)
	}
}
