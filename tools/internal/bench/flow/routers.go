package flow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// routerCloseTimeout bounds a router's wait for its running handler
// functions on Close.
const routerCloseTimeout = 10 * time.Second

// routers are the consumers of one round: replicas of one service, each a
// router with the same handler, sharing its consumer group.
type routers struct {
	list []*message.Router
	errs chan error
}

// startRouters starts n routers, each set up by add, and returns once every
// one is running.
func startRouters(ctx context.Context, n int, logger *slog.Logger, add func(*message.Router) error) (*routers, error) {
	rs := &routers{errs: make(chan error, n)}
	for range n {
		r, err := message.NewRouter(message.RouterConfig{CloseTimeout: routerCloseTimeout}, watermill.NewSlogLogger(logger))
		if err == nil {
			err = add(r)
		}
		if err != nil {
			return nil, errors.Join(err, rs.close())
		}
		rs.list = append(rs.list, r)
		go func() { rs.errs <- r.Run(context.WithoutCancel(ctx)) }()
	}
	for _, r := range rs.list {
		select {
		case <-r.Running():
		case err := <-rs.errs:
			return nil, errors.Join(fmt.Errorf("starting a router: %w", err), rs.close())
		case <-ctx.Done():
			return nil, errors.Join(context.Cause(ctx), rs.close())
		}
	}
	return rs, nil
}

// close stops every router and waits for it.
func (rs *routers) close() error {
	var err error
	for _, r := range rs.list {
		err = errors.Join(err, r.Close())
	}
	return err
}
