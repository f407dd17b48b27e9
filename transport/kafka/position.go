package kafka

import "context"

// positionKey is the context key of a message's [position].
type positionKey struct{}

// position is where a message was read.
type position struct {
	Partition int32
	Offset    int64
}

// positionFromCtx returns the partition and offset of the message
// whose context is ctx, as [subscriber] sets them.
func positionFromCtx(ctx context.Context) (position, bool) {
	p, ok := ctx.Value(positionKey{}).(position)
	return p, ok
}
