package bench

import (
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/onceflow/onceflow/middleware/consume"
)

// Deduplicator returns Watermill's middleware.Deduplicator on a fresh
// in-memory repository, keyed by the same metadata field as the receiver.
// (It marks a key before the handler runs and never releases it, so a
// failed handler's redelivery is acked as a duplicate: the comparison is
// of speed only.)
func Deduplicator() ([]message.HandlerMiddleware, func(), error) {
	repo, err := wmmw.NewMapExpiringKeyRepository(recordTTL)
	if err != nil {
		return nil, nil, err
	}
	d := &wmmw.Deduplicator{
		KeyFactory: wmmw.NewMessageHasherFromMetadataField(consume.MetadataKey),
		Repository: repo,
		Timeout:    time.Minute,
	}
	return []message.HandlerMiddleware{d.Middleware}, func() {}, nil
}

// Seed returns [SeedMiddleware] on the run's Redis.
func Seed(env *Env) Middleware {
	return func() ([]message.HandlerMiddleware, func(), error) {
		return []message.HandlerMiddleware{SeedMiddleware(env.Redis, env.Prefix+"seed:", 30*time.Second, 10*time.Minute)}, func() {}, nil
	}
}
