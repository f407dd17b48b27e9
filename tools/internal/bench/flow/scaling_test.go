package flow

import (
	"context"
	"fmt"
	"testing"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/internal/testenv/redismeter"
)

// BenchmarkTransportScaling reports receiver-on and receiver-off messages
// per second as the parallel units grow: Kafka partitions and RabbitMQ
// consumers, each consumer holding DefaultInFlight messages (the
// messages in flight themselves are swept by make bench). With the
// receiver on, each message waits two Redis round trips (see RoundTimes),
// so the on/off ratio should approach 1 as units multiply only once
// Redis, not the units, is the limit. With the receiver on it also
// reports the mean Redis command latency seen during the round.
func BenchmarkTransportScaling(b *testing.B) {
	type shape struct {
		kind                  string
		partitions, consumers int
	}
	shapes := []shape{
		{"kafka", 1, 1}, {"kafka", 4, 1}, {"kafka", 16, 1},
		{"amqp", 1, 1}, {"amqp", 1, 4}, {"amqp", 1, 16},
	}
	for _, s := range shapes {
		for _, receiver := range []bool{false, true} {
			name := fmt.Sprintf("%s/partitions=%d/consumers=%d/receiver=%v", s.kind, s.partitions, s.consumers, receiver)
			b.Run(name, func(b *testing.B) {
				client, meter := testenv.Redis(b), &redismeter.Meter{}
				client.AddHook(meter)
				o := TransportOptions{Kind: s.kind, Redis: client, Partitions: s.partitions, Consumers: s.consumers,
					Messages: benchSize(2000, DefaultMessages)}
				if s.kind == "kafka" {
					o.KafkaBrokers = brokerenv.Kafka(b)
					o.Messages = benchSize(5000, DefaultKafkaMessages)
				} else {
					o.AMQPURL = brokerenv.AMQP(b)
				}
				benchRounds(b, func(ctx context.Context) (*TransportBench, error) { return NewTransportBench(ctx, o) },
					func(ctx context.Context, t *TransportBench) (float64, error) {
						meter.Reset()
						return t.Round(ctx, receiver)
					})
				if receiver {
					b.ReportMetric(float64(meter.Mean().Microseconds()), "redis-µs/cmd")
				}
			})
		}
	}
}
