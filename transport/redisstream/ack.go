package redisstream

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/redis/go-redis/v9"
)

// acker XACKs the entries a subscription's handlers acked: the
// IDs queued while one XACK is under way go together in the next. An XACK
// that fails is sent again every ackRetryPause. At most
// inFlight IDs wait in the queue: a delivery whose ack finds it full keeps
// its slot until there is room, so that a Redis that takes no ack stops
// the reads too.
type acker struct {
	client *redis.Client
	stream string
	group  string
	logger watermill.LoggerAdapter
	ids    chan string
	stop   context.CancelFunc // ends the retries of the last XACKs
}

func newAcker(client *redis.Client, stream, group string, inFlight int, logger watermill.LoggerAdapter) *acker {
	return &acker{client: client, stream: stream, group: group, logger: logger, ids: make(chan string, inFlight)}
}

// start sends the acks until finish was called and every queued one was
// sent, and closes the channel it returns then. The subscription's
// context ctx ending does not stop it: the acks of the handlers that
// finished are still sent, each retried until releaseTimeout
// after finish.
func (a *acker) start(ctx context.Context) <-chan struct{} {
	ctx, a.stop = context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer a.stop()
		batch := make([]string, 0, cap(a.ids))
		for id := range a.ids {
			batch = a.batch(append(batch[:0], id))
			a.send(ctx, batch)
		}
	}()
	return done
}

// add queues the XACK of entry id, unless ctx ends while the queue is
// full: the entry then stays pending, for releasePending.
func (a *acker) add(ctx context.Context, id string) {
	select {
	case a.ids <- id:
		return
	default:
	}
	select {
	case a.ids <- id:
	case <-ctx.Done():
	}
}

// finish closes the queue once no delivery adds to it any more, and
// bounds the retries of what it holds by releaseTimeout.
func (a *acker) finish() {
	close(a.ids)
	time.AfterFunc(releaseTimeout, a.stop)
}

// batch adds to batch the IDs queued now, up to the queue's size.
func (a *acker) batch(batch []string) []string {
	for len(batch) < cap(a.ids) {
		select {
		case id, ok := <-a.ids:
			if !ok {
				return batch
			}
			batch = append(batch, id)
		default:
			return batch
		}
	}
	return batch
}

// send XACKs ids, again after each failure until ctx ends; the first
// failure is logged, and giving up.
func (a *acker) send(ctx context.Context, ids []string) {
	for attempt := 0; ; attempt++ {
		err := a.client.XAck(ctx, a.stream, a.group, ids...).Err()
		if err == nil {
			return
		}
		if attempt == 0 && ctx.Err() == nil {
			a.logger.Error("Could not ack entries, retrying", err, watermill.LogFields{"entries": len(ids)})
		}
		if !pause(ctx, ackRetryPause) {
			a.logger.Error("Gave up acking entries: they will be delivered again", err, watermill.LogFields{"entries": len(ids)})
			return
		}
	}
}
