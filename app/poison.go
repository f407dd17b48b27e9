package app

import (
	"context"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/middleware/metrics"
	"github.com/onceflow/onceflow/poison"
	poisonmemory "github.com/onceflow/onceflow/poison/memory"
	poisonpostgres "github.com/onceflow/onceflow/poison/postgres"
	redispoison "github.com/onceflow/onceflow/poison/redis"
)

// openPoison opens where the poisoned messages are parked — PostgreSQL
// with DATABASE_URL, else Redis with STORE=redis, else memory — within
// POISON_MAX_MESSAGES, POISON_MAX_BYTES and POISON_RETENTION, and the
// console that redrives them through the service's publisher (signed and
// traced like the API's messages, straight to the broker).
func (b *assembly) openPoison(context.Context) error {
	limits := poison.Limits{MaxMessages: b.cfg.PoisonMaxMessages, MaxBytes: b.cfg.PoisonMaxBytes, Retention: b.cfg.PoisonRetention}
	store, err := b.poisonStore(limits)
	if err != nil {
		return err
	}
	b.poison = &poison.Console{Store: store, Publisher: b.publisher(b.transport.Publisher()),
		Topics: b.parts.Routes.Topics(), Logger: b.logger}
	return nil
}

// poisonStore is the store of parked messages: in the database, else in
// STORE=redis's Redis (under the records' key prefix), else in memory.
func (b *assembly) poisonStore(limits poison.Limits) (poison.Store, error) {
	switch {
	case b.pool != nil:
		return poisonpostgres.New(b.pool, poisonpostgres.Config{Limits: limits})
	case b.store.rdb != nil:
		return redispoison.New(b.store.rdb, redispoison.Config{KeyPrefix: b.cfg.redisKeyPrefix() + "poison:", Limits: limits})
	}
	return poisonmemory.New(limits, nil)
}

// poisonReader is the handler of the poison topic: it logs and counts every
// message it reads (a loop would show), then parks it, counting the
// outcome in
//
//	onceflow_poison_parked_total{outcome}  parked, full or error
//
// A message that could not be parked is left on the poison topic for a
// later try.
func (b *assembly) poisonReader() (message.NoPublishHandlerFunc, error) {
	consumed := make([]string, 0, len(b.parts.Routes))
	for _, r := range b.parts.Routes {
		consumed = append(consumed, r.Consumes)
	}
	log, err := metrics.NewPoisonLog(b.reg, consumed, b.logger)
	if err != nil {
		return nil, err
	}
	outcomes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "onceflow_poison_parked_total",
		Help: "Attempts to park a poisoned message for operators, by outcome (parked; full or error: left on the poison topic).",
	}, []string{"outcome"})
	if err := b.reg.Register(outcomes); err != nil {
		return nil, err
	}
	for _, o := range []string{"parked", "full", "error"} {
		outcomes.WithLabelValues(o)
	}
	parker := &poison.Parker{Store: b.poison.Store, Parked: func(o string) { outcomes.WithLabelValues(o).Inc() },
		MaxPayload: b.cfg.poisonMaxPayload()}
	return func(msg *message.Message) error {
		if err := log.Handle(msg); err != nil {
			return fmt.Errorf("logging poisoned message: %w", err)
		}
		return parker.Handle(msg)
	}, nil
}

// poisonMaxPayload is the most of a poisoned payload kept: all of it up
// to MAX_MESSAGE_BYTES (4 MiB when that is 0), and at most a quarter of
// POISON_MAX_BYTES, so that every message fits an empty store.
func (c Config) poisonMaxPayload() int {
	limit := int64(c.MaxMessageBytes)
	if limit == 0 {
		limit = 4 << 20
	}
	return int(min(limit, c.PoisonMaxBytes/4))
}
