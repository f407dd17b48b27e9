package transport

import (
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// newGoChannel is the in-process transport: every handler subscribes to the
// same Go channel pub/sub. Messages live only in this process.
//
// Publish blocks until every subscriber has acked the message. That is the
// transport's backpressure: without it each message is delivered on its own
// goroutine, so a burst of thousands runs at once, exhausts the database
// pool, times out and is nacked and resent at once — a livelock. Blocking
// bounds the work in flight by the number of publishers, as a real broker's
// prefetch does; an API that publishes then answers once the message is
// handled.
func newGoChannel(logger watermill.LoggerAdapter) Transport {
	ps := gochannel.NewGoChannel(gochannel.Config{
		OutputChannelBuffer:            256,
		BlockPublishUntilSubscriberAck: true,
	}, logger)
	return Transport{
		publisher:  ps,
		subscriber: func(string, int) (message.Subscriber, error) { return ps, nil },
		close:      ps.Close,
	}
}
