package transport

import (
	"context"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
)

// subscribeLanes subscribes n times with subscribe and merges what the n
// subscriptions (lanes) deliver into one channel. A lane of a Watermill
// adapter that hands out a message and waits for its ack before it takes
// the next holds one message in flight; n of them on the same consumer
// group or queue hold n, each acked, nacked and redelivered by its own lane
// as before. The lanes compete for the group's messages as replicas do, so
// nothing is delivered twice and no order holds between them.
//
// subscribe is called with a context that ends when ctx ends or a later
// call fails. The channel closes once every lane's channel has closed
// (the subscriber was closed, or ctx ended) and ended, when not nil, has
// returned: it is where a subscription hands back to the broker what its
// lanes leave behind. A message a lane delivers after ctx ended is nacked
// rather than handed out, so its lane hands it back. If a call fails, the
// lanes already open are ended that way, ended is not called, and the
// error is returned.
func subscribeLanes(ctx context.Context, n int, subscribe func(context.Context) (<-chan *message.Message, error), ended func()) (<-chan *message.Message, error) {
	ctx, cancel := context.WithCancel(ctx)
	lanes := make([]<-chan *message.Message, 0, n)
	for range n {
		ch, err := subscribe(ctx)
		if err != nil {
			cancel()
			for _, lane := range lanes {
				go nackAll(lane)
			}
			return nil, err
		}
		lanes = append(lanes, ch)
	}
	out := make(chan *message.Message)
	var running sync.WaitGroup
	for _, lane := range lanes {
		running.Go(func() {
			for m := range lane {
				select {
				case out <- m:
				case <-ctx.Done():
					m.Nack()
				}
			}
		})
	}
	go func() {
		running.Wait()
		cancel()
		if ended != nil {
			ended()
		}
		close(out)
	}()
	return out, nil
}

// nackAll nacks what ch delivers until it closes.
func nackAll(ch <-chan *message.Message) {
	for m := range ch {
		m.Nack()
	}
}
