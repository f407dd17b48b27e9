package broker

import (
	"context"
	"errors"
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
// lanes leave behind. closed closes once the channel has. A message a lane
// delivers after ctx ended is nacked rather than handed out, so its lane
// hands it back. If a call fails, the lanes already open are ended that
// way, ended is not called, and the error is returned.
func subscribeLanes(ctx context.Context, n int, subscribe func(context.Context) (<-chan *message.Message, error), ended func()) (
	msgs <-chan *message.Message, closed <-chan struct{}, err error,
) {
	ctx, cancel := context.WithCancel(ctx)
	lanes := make([]<-chan *message.Message, 0, n)
	for range n {
		ch, err := subscribe(ctx)
		if err != nil {
			cancel()
			for _, lane := range lanes {
				go nackAll(lane)
			}
			return nil, nil, err
		}
		lanes = append(lanes, ch)
	}
	out := make(chan *message.Message)
	done := make(chan struct{})
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
		close(done)
	}()
	return out, done, nil
}

// nackAll nacks what ch delivers until it closes.
func nackAll(ch <-chan *message.Message) {
	for m := range ch {
		m.Nack()
	}
}

// Lanes are the subscriptions of one subscriber, each merging lanes
// (subscribeLanes), which its Close ends with End. The zero value has
// none. Safe for concurrent use.
type Lanes struct {
	mu    sync.Mutex
	ended bool
	open  map[<-chan struct{}]context.CancelFunc // each subscription's closed, and what ends it
}

// Subscribe is subscribeLanes for a subscription that End ends too. It
// fails once End or Cancel was called.
func (ls *Lanes) Subscribe(ctx context.Context, n int, subscribe func(context.Context) (<-chan *message.Message, error), ended func()) (<-chan *message.Message, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.ended {
		return nil, errors.New("subscriber closed")
	}
	ctx, cancel := context.WithCancel(ctx)
	msgs, closed, err := subscribeLanes(ctx, n, subscribe, ended)
	if err != nil {
		cancel()
		return nil, err
	}
	if ls.open == nil {
		ls.open = map[<-chan struct{}]context.CancelFunc{}
	}
	ls.open[closed] = cancel
	go func() {
		<-closed
		cancel()
		ls.mu.Lock()
		defer ls.mu.Unlock()
		delete(ls.open, closed)
	}()
	return msgs, nil
}

// End ends every subscription (Cancel) and returns once their channels
// are closed (Wait).
func (ls *Lanes) End() {
	ls.Cancel()
	ls.Wait()
}

// Cancel ends every subscription as the end of its context does: a
// message a lane still delivers is nacked, not handed out. Later calls to
// Subscribe fail.
func (ls *Lanes) Cancel() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.ended = true
	for _, cancel := range ls.open {
		cancel()
	}
}

// Wait returns once the channel of every subscription open now is
// closed, and so its ended hook has returned.
func (ls *Lanes) Wait() {
	ls.mu.Lock()
	open := make([]<-chan struct{}, 0, len(ls.open))
	for closed := range ls.open {
		open = append(open, closed)
	}
	ls.mu.Unlock()
	for _, closed := range open {
		<-closed
	}
}
