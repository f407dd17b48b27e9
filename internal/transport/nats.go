package transport

import (
	"context"
	"errors"

	"github.com/ThreeDotsLabs/watermill"
)

// newNATS is the NATS JetStream transport.
func newNATS(ctx context.Context, cfg Config, logger watermill.LoggerAdapter) (Transport, error) {
	return Transport{}, errors.New("the nats transport is not built yet")
}
