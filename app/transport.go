package app

import (
	"fmt"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// transport is a broker as the router sees it: one publisher, and a
// subscriber per handler so that each handler consumes independently (its
// own consumer group or queue) while replicas of the service share the work.
type transport struct {
	publisher message.Publisher
	// subscriber returns the subscriber for the named handler.
	subscriber func(handler string) (message.Subscriber, error)
	close      func() error
}

// newTransport builds the transport TRANSPORT names.
func newTransport(cfg Config, logger *slog.Logger) (transport, error) {
	wlog := watermill.NewSlogLogger(logger)
	switch cfg.Transport {
	case "gochannel":
		return newGoChannel(wlog), nil
	default: // Config.Validate admits only the transports above
		return transport{}, fmt.Errorf("TRANSPORT=%q is not supported", cfg.Transport)
	}
}

// newGoChannel is the in-process transport: every handler subscribes to the
// same Go channel pub/sub. Messages live only in this process.
func newGoChannel(logger watermill.LoggerAdapter) transport {
	ps := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 256}, logger)
	return transport{
		publisher:  ps,
		subscriber: func(string) (message.Subscriber, error) { return ps, nil },
		close:      ps.Close,
	}
}
