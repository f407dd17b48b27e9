package metrics_test

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/metrics"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// BenchmarkReceiverHandler is package consume's of the same name, the
// wrapped HandlerFunc called directly, with the Prometheus observer: its
// difference to consume's receiver-memory is the observer's cost per
// message.
func BenchmarkReceiverHandler(b *testing.B) {
	noop := func(*message.Message) ([]*message.Message, error) { return nil, nil }
	b.Run("receiver-memory-prometheus", func(b *testing.B) {
		obs, err := metrics.NewObserver(prometheus.NewRegistry(), "memory")
		if err != nil {
			b.Fatal(err)
		}
		r, _ := receivertest.NewBenchReceiver(b, receiver.Config{Observer: obs})
		receivertest.BenchHandlerFunc(b, consume.Middleware(r)(noop))
	})
}
