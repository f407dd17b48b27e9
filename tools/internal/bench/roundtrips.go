package bench

import (
	"context"
	"fmt"
	"strconv"

	"github.com/onceflow/onceflow/internal/testenv/redismeter"
	"github.com/onceflow/onceflow/middleware/receiver"
)

// RoundTrips measures Redis round trips per message through the receiver
// on a fresh store of backend b (Redis or RedisPlain): n unique messages, run one after another; with
// duplicate, the same n again after the counted unique pass is done, and
// only the copies are counted. A few messages run first, uncounted, so
// loading the store's scripts is not charged to a message.
func RoundTrips(env *Env, b Backend, n int, duplicate bool) func(ctx context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		client := NewRedisClient(env.RedisAddr)
		defer func() { _ = client.Close() }()
		counter := &redismeter.Meter{}
		client.AddHook(counter)
		s, closeStore, err := env.NewStoreOn(b, client)
		if err != nil {
			return 0, err
		}
		defer closeStore()
		r, err := newReceiver(s)
		if err != nil {
			return 0, err
		}
		payload := []byte("payload")
		fp := fingerprint(payload)
		execAll := func(prefix string, count int, want receiver.Outcome) error {
			for i := range count {
				key := prefix + strconv.Itoa(i)
				res, err := r.Execute(ctx, "bench", key, fp,
					func(context.Context) ([]byte, error) { return payload, nil })
				if err != nil {
					return err
				}
				if res.Outcome != want {
					return fmt.Errorf("key %q: outcome %v, want %v", key, res.Outcome, want)
				}
			}
			return nil
		}
		if err := execAll(nextKeys(), 3, receiver.OutcomeProcessed); err != nil { // loads the scripts
			return 0, err
		}
		prefix, want := nextKeys(), receiver.OutcomeProcessed
		if duplicate {
			if err := execAll(prefix, n, want); err != nil {
				return 0, err
			}
			want = receiver.OutcomeDuplicate
		}
		before := counter.RoundTrips()
		if err := execAll(prefix, n, want); err != nil {
			return 0, err
		}
		return float64(counter.RoundTrips()-before) / float64(n), nil
	}
}
