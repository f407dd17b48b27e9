package transport

import "context"

// kafkaPositionKey is the context key of a message's [kafkaPosition].
type kafkaPositionKey struct{}

// kafkaPosition is where a message was read.
type kafkaPosition struct {
	Partition int32
	Offset    int64
}

// kafkaPositionFromCtx returns the partition and offset of the message
// whose context is ctx, as [kafkaSubscriber] sets them.
func kafkaPositionFromCtx(ctx context.Context) (kafkaPosition, bool) {
	p, ok := ctx.Value(kafkaPositionKey{}).(kafkaPosition)
	return p, ok
}
