package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// durabilityStates are the values of the state label of
// onceflow_store_durability, one series each per setting.
var durabilityStates = []redisstore.State{redisstore.OK, redisstore.AtRisk, redisstore.Unknown}

// checkRedisDurability reads whether the Redis behind rdb can forget
// records (see redisstore.Inspect), exports the verdicts on reg as
// onceflow_store_durability{setting,state} (1 for the state found, 0 for the
// others), and logs one warning naming the settings at risk, or, with
// REDIS_REQUIRE_DURABLE=true, returns that line as its error. Settings that
// cannot be read get one warning of their own and never refuse start-up.
func checkRedisDurability(ctx context.Context, cfg Config, rdb redis.UniversalClient, reg prometheus.Registerer, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	d, err := redisstore.Inspect(ctx, rdb)
	if err != nil {
		return fmt.Errorf("checking whether Redis (%s) keeps records: %w", redisVar(cfg), err)
	}
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "onceflow_store_durability",
		Help: "Whether the Redis record store keeps records, per setting (appendonly, maxmemory-policy): " +
			"1 on the series of the state found at start-up (ok, at_risk, unknown), 0 on the others.",
	}, []string{"setting", "state"})
	for _, v := range d.Verdicts() {
		for _, s := range durabilityStates {
			value := 0.0
			if v.State == s {
				value = 1
			}
			gauge.WithLabelValues(v.Setting, string(s)).Set(value)
		}
	}
	if err := reg.Register(gauge); err != nil {
		return err
	}
	if err := d.Err(); err != nil {
		if cfg.RedisRequireDurable {
			return fmt.Errorf("%w (REDIS_REQUIRE_DURABLE=true)", err)
		}
		logger.Warn(err.Error())
	}
	if u := d.Unchecked(); u != "" {
		logger.Warn(u)
	}
	return nil
}

// checkRedisVersion refuses to start on a Redis the store cannot run on
// (see redisstore.CheckVersion), naming the variable that points to it.
func checkRedisVersion(ctx context.Context, cfg Config, rdb redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := redisstore.CheckVersion(ctx, rdb); err != nil {
		return fmt.Errorf("STORE=redis on %s: %w", redisVar(cfg), err)
	}
	return nil
}
