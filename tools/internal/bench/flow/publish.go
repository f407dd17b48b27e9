package flow

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"golang.org/x/sync/errgroup"
)

// publishing is how a kind of transport is fed fastest: workers concurrent
// Publish calls of perCall messages each.
type publishing struct{ workers, perCall int }

// publishingOf returns the publishing of a transport kind. Kafka's and
// RabbitMQ's publishers confirm each message on its own (acks=all,
// publisher confirms), so many calls run at once; the SQL publisher writes
// a call's messages in one INSERT.
func publishingOf(kind string) publishing {
	switch kind {
	case "kafka", "amqp":
		return publishing{workers: 64, perCall: 1}
	case "sql":
		return publishing{workers: 4, perCall: 250}
	default: // gochannel: each Publish waits for the handler's ack; nats and
		// redisstream: each waits for the stream to store the message
		return publishing{workers: 64, perCall: 1}
	}
}

// publishAll publishes msgs to topic, in order within each call.
func publishAll(ctx context.Context, pub message.Publisher, topic string, msgs []*message.Message, p publishing) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.workers)
	for start := 0; start < len(msgs); start += p.perCall {
		if gctx.Err() != nil {
			break
		}
		chunk := msgs[start:min(start+p.perCall, len(msgs))]
		g.Go(func() error { return pub.Publish(topic, chunk...) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return context.Cause(ctx)
}
