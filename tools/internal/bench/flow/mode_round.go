package flow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/exactlyonce"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/postgres"
	"github.com/onceflow/onceflow/transport"
	"github.com/onceflow/onceflow/transport/sqlsubscriber"
)

// outputTopic receives the message each handled message produces.
const outputTopic = "bench_out"

// round runs one round of the mode bench (see Round); it returns the
// tally and the round's topic prefix.
func (b *ModeBench) round(ctx context.Context, mode Mode) (_ *tally, prefix string, err error) {
	if mode != LeaseMode && mode != TransactionMode {
		return nil, "", fmt.Errorf("unknown mode %q: use %s or %s", mode, LeaseMode, TransactionMode)
	}
	id := shortID()
	cfg := transport.Config{
		Kind:        transport.SQL,
		ServiceName: "bench",
		TopicPrefix: "bm" + id + ".",
		Pool:        b.schema.pool,
		SQLBeginner: exactlyonce.ConsumerBeginner,
		Logger:      b.opts.Logger,
	}
	tr, err := transport.New(ctx, cfg)
	if err != nil {
		return nil, "", err
	}
	defer func() { err = errors.Join(err, tr.Close()) }()
	// A publisher on a transaction cannot create its topic's table.
	if err := initializeTopic(b.schema.pool, cfg, outputTopic); err != nil {
		return nil, "", err
	}
	rcfg := receiver.Config{Store: b.store, TTL: recordTTL, Logger: b.opts.Logger}
	var opts []consume.Option
	if mode == TransactionMode {
		rcfg.Transactor = exactlyonce.Transactor{DB: b.schema.pool, Store: b.store}
		ob := exactlyonce.Outbox{Topics: map[string]string{benchHandler: outputTopic}, Publisher: tr.Publisher(),
			TopicPrefix: cfg.TopicPrefix, Logger: b.opts.Logger}
		opts = append(opts, consume.WithOutbox(ob.Write))
	}
	rec, err := receiver.New(rcfg)
	if err != nil {
		return nil, "", err
	}
	msgs, _ := batch(id, b.opts.Messages, 0, minCopyLag)
	tl := newTally(b.opts.Messages, len(msgs), nil)
	handle := effectHandler(b.schema.pool, tl)
	consume := func() (*routers, error) {
		return startRouters(ctx, 1, b.opts.Logger, func(r *message.Router) error {
			sub, err := tr.Subscriber(benchHandler, 1) // the sql transport holds one at a time
			if err != nil {
				return err
			}
			r.AddMiddleware(tl.count, consume.Middleware(rec, opts...))
			r.AddHandler(benchHandler, benchTopic, sub, outputTopic, tr.Publisher(), handle)
			return nil
		})
	}
	// The round ends when every effect is committed: in transaction mode
	// that is when the consumer commits the batch, after its last ack.
	settle := func(ctx context.Context) error { return waitEffects(ctx, b.schema.pool, id, b.opts.Messages, tl) }
	return tl, cfg.TopicPrefix, runRound(ctx, transport.SQL, tr.Publisher(), benchTopic, msgs, tl, consume, settle)
}

// effectsPoll is the pause between two counts of the committed effects.
const effectsPoll = 2 * time.Millisecond

// waitEffects returns once n effects of round are committed, and ends tl's
// round then.
func waitEffects(ctx context.Context, pool *pgxpool.Pool, round string, n int, tl *tally) error {
	ctx, cancel := context.WithTimeout(ctx, stallTimeout)
	defer cancel()
	for {
		var got int
		err := pool.QueryRow(ctx, "SELECT count(*) FROM "+effectsTable+" WHERE key LIKE $1", round+"-%").Scan(&got)
		if err != nil {
			return fmt.Errorf("counting the committed effects: %w", err)
		}
		if got >= n {
			tl.finished(time.Now())
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d effects committed: %w", got, n, context.Cause(ctx))
		case <-time.After(effectsPoll):
		}
	}
}

// effectHandler counts the execution, inserts the message's key into the
// effects table (in the unit of work's transaction when there is one) and
// produces one message.
func effectHandler(pool *pgxpool.Pool, tl *tally) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		if err := tl.execute(msg); err != nil {
			return nil, err
		}
		ctx := msg.Context()
		const insert = "INSERT INTO " + effectsTable + " (key) VALUES ($1)"
		key := msg.Metadata.Get(consume.MetadataKey)
		var err error
		if tx, ok := postgres.TxFromContext(ctx); ok {
			_, err = tx.Exec(ctx, insert, key)
		} else {
			_, err = pool.Exec(ctx, insert, key)
		}
		if err != nil {
			return nil, fmt.Errorf("recording the effect of %s: %w", key, err)
		}
		out := message.NewMessage(watermill.NewUUID(), msg.Payload)
		out.Metadata.Set(consume.MetadataKey, key)
		return []*message.Message{out}, nil
	}
}

// initializeTopic creates topic's tables on the sql transport of cfg.
func initializeTopic(pool *pgxpool.Pool, cfg transport.Config, topic string) error {
	sub, err := sqlsubscriber.New(pool, sqlsubscriber.Config{ConsumerGroup: cfg.Names().ConsumerGroup("init"), Logger: cfg.Logger})
	if err != nil {
		return err
	}
	return errors.Join(sub.SubscribeInitialize(cfg.TopicPrefix+topic), sub.Close())
}
