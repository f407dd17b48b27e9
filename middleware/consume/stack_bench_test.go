package consume

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// BenchmarkRouterStack sets growStack beside the standard library's way,
// leaving the stack to grow as it must: the Watermill face with and
// without it, in a GoChannel router, whose goroutine per message is where
// the stack grows (the receiver's own speed devices are package receiver's
// benchmarks).
func BenchmarkRouterStack(b *testing.B) {
	noGrow := func(r *receiver.Receiver) message.HandlerMiddleware {
		o := messageOptions{key: KeyFromMetadata(MetadataKey), fingerprint: PayloadFingerprint}
		return func(h message.HandlerFunc) message.HandlerFunc {
			return (&messageHandler{r: r, obs: r.Config().Observer, o: o, h: h}).handle
		}
	}
	b.Run("stack=grown", func(b *testing.B) {
		r, _ := receivertest.NewBenchReceiver(b, receiver.Config{})
		benchRouter(b, Middleware(r))
	})
	b.Run("stack=std", func(b *testing.B) {
		r, _ := receivertest.NewBenchReceiver(b, receiver.Config{})
		benchRouter(b, noGrow(r))
	})
}
