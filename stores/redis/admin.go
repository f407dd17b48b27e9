package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/stores"
	"github.com/onceflow/onceflow/stores/redis/internal/redisscript"
)

var _ stores.Admin = (*Store)(nil)

// The admin scripts. Like the others they touch only the record's own
// hash, so they run on a Cluster.
var (
	lookupScript = redis.NewScript(redisscript.Lookup)
	removeScript = redis.NewScript(redisscript.Remove)
)

// Lookup implements [stores.Admin]. It runs lookupScript: one round trip.
func (s *Store) Lookup(ctx context.Context, key string) (stores.Entry, error) {
	k, err := stores.StorageKey(key)
	if err != nil {
		return stores.Entry{}, fmt.Errorf("looking up key %q: %w", shown(key), err)
	}
	reply, err := s.run(ctx, "lookup", lookupScript, k)
	var e stores.Entry
	if err == nil {
		e, err = parseLookup(reply)
	}
	if err != nil {
		return stores.Entry{}, fmt.Errorf("looking up key %q: %w", k, err)
	}
	return e, nil
}

// Remove implements [stores.Admin]. It runs removeScript: one round trip.
func (s *Store) Remove(ctx context.Context, key string, read stores.Entry) error {
	k, err := stores.CheckRemove(key, read)
	if err != nil {
		return fmt.Errorf("removing key %q: %w", shown(key), err)
	}
	reply, err := s.run(ctx, "remove", removeScript, k, string(read.Token), read.Status.String())
	if err == nil {
		switch reply {
		case int64(1):
		case int64(0):
			err = stores.ErrNotFound
		default:
			err = fmt.Errorf("unexpected script reply %#v", reply)
		}
	}
	if err != nil {
		return fmt.Errorf("removing key %q: %w", k, err)
	}
	return nil
}

// parseLookup turns the reply of lookupScript into a [stores.Entry].
func parseLookup(reply any) (stores.Entry, error) {
	r, ok := reply.([]any)
	if !ok || len(r) == 0 {
		return stores.Entry{}, fmt.Errorf("unexpected lookup reply %#v", reply)
	}
	p := fields{r: r}
	var e stores.Entry
	switch p.str(0) {
	case "absent":
		return e, stores.ErrNotFound
	case "in_progress":
		e.Status, e.Token = stores.InProgress, stores.Token(p.str(1))
		e.Record.Fingerprint = p.bytes(2)
		e.Record.CreatedAt = p.time(3)
		e.LeaseUntil = p.time(4)
		return e, p.check(5)
	case "completed":
		e.Status, e.Token, e.Record = stores.Completed, stores.Token(p.str(1)), p.completed(2)
		return e, p.check(7)
	default:
		return e, fmt.Errorf("unexpected lookup reply %#v", reply)
	}
}
