package redispoison_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/poison"
	redispoison "github.com/onceflow/onceflow/poison/redis"
)

func TestNewRefuses(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: testenv.ClosedAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	if _, err := redispoison.New(nil, redispoison.Config{}); err == nil {
		t.Error("New without a client succeeded")
	}
	if _, err := redispoison.New(c, redispoison.Config{Limits: poison.Limits{MaxMessages: 10}}); err == nil {
		t.Error("New with limits of which two are zero succeeded")
	}
	if _, err := redispoison.New(c, redispoison.Config{}); err != nil {
		t.Errorf("New with the zero Config: %v", err)
	}
}

// Every key of a store is in one Cluster slot, whatever its prefix holds,
// and the scripts that touch several keys run there.
func TestKeysShareOneSlot(t *testing.T) {
	c := testenv.RedisCluster(t)
	ctx := testCtx(t)
	for name, suffix := range map[string]string{"plain": "", "with braces": "{x}y}{"} {
		t.Run(name, func(t *testing.T) {
			prefix := testenv.KeyPrefix(t) + suffix
			clock := base
			s := newStore(t, c, redispoison.Config{KeyPrefix: prefix, Now: func() time.Time { return clock },
				Limits: poison.Limits{MaxMessages: 100, MaxBytes: 1 << 20, Retention: time.Hour}})
			ids := parkMany(t, s, 20)
			if _, err := s.Settle(ctx, ids[3], poison.Settlement{State: poison.Redriven, By: "op", At: base}); err != nil {
				t.Fatal(err)
			}
			if ms, _, err := s.List(ctx, poison.Filter{Limit: 5}); err != nil || len(ms) != 5 {
				t.Fatalf("List = %d messages, %v", len(ms), err)
			}
			keys, slots := testenv.ClusterSlots(t, c, "{"+prefix+"}*")
			if len(keys) < 24 || len(slots) != 1 {
				t.Errorf("%d keys in %d slots, want 20 messages and 4 more in one slot: %v", len(keys), len(slots), keys)
			}
		})
	}
}

// What a message holds comes back byte for byte, bytes that are not UTF-8
// included: a redriven message must keep its idempotency key.
func TestBytesRoundTrip(t *testing.T) {
	s := newStore(t, testenv.Redis(t), redispoison.Config{Now: func() time.Time { return base }})
	ctx := testCtx(t)
	odd := "k\xff\xfe\x00{}\n"
	m := poison.Message{UUID: "u" + odd, Topic: "t" + odd, Handler: "h" + odd, Reason: "r" + odd, Class: poison.KeyReused,
		Key: odd, Metadata: map[string]string{poison.KeyKey: odd, "": "", odd: "v" + odd, "empty": ""},
		Payload: []byte(odd), ParkedAt: time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.FixedZone("X", 3600))}
	id, err := s.Park(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.UUID != m.UUID || got.Topic != m.Topic || got.Handler != m.Handler || got.Reason != m.Reason ||
		got.Class != m.Class || got.Key != m.Key || string(got.Payload) != string(m.Payload) || !maps.Equal(got.Metadata, m.Metadata) {
		t.Errorf("Get = %+q,\nwant %+q", got, m)
	}
	if want := m.ParkedAt.Truncate(time.Microsecond); !got.ParkedAt.Equal(want) || got.ParkedAt.Location() != time.UTC {
		t.Errorf("ParkedAt = %v, want %v in UTC", got.ParkedAt, want)
	}
	// No metadata at all reads back as empty metadata.
	id, err = s.Park(ctx, poison.Message{UUID: "bare"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, id); err != nil || got.Metadata == nil || len(got.Metadata) != 0 || got.ParkedAt.IsZero() {
		t.Errorf("Get of a bare message = %+v, %v; want empty metadata, parked now", got, err)
	}
}

// An id is the decimal form Park returned, and nothing else.
func TestIDsAreCanonical(t *testing.T) {
	s := newStore(t, testenv.Redis(t), redispoison.Config{})
	ctx := testCtx(t)
	id, err := s.Park(ctx, poison.Message{UUID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if id != "1" {
		t.Errorf("the first id = %q, want 1", id)
	}
	for _, other := range []string{"0" + id, "+" + id, " " + id, id + ".0", "-1", "9007199254740993", ""} {
		if _, err := s.Get(ctx, other); !errors.Is(err, poison.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", other, err)
		}
	}
	if _, _, err := s.List(ctx, poison.Filter{After: "x"}); err == nil {
		t.Error("List after a cursor that is not an id succeeded")
	}
	if _, err := s.Settle(ctx, id, poison.Settlement{State: poison.Parked, By: "op"}); err == nil || errors.Is(err, poison.ErrSettled) {
		t.Errorf("Settle to parked = %v, want a refusal", err)
	}
}

// Park deletes messages past their retention, SweepBatch at a time, and
// their bytes with them; until they are deleted they still take room.
func TestParkSweepsExpired(t *testing.T) {
	c := testenv.Redis(t)
	ctx := testCtx(t)
	prefix := testenv.KeyPrefix(t)
	var mu sync.Mutex
	clock := base
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	n := redispoison.SweepBatch + 10
	roomy := newStore(t, c, redispoison.Config{KeyPrefix: prefix, Now: now,
		Limits: poison.Limits{MaxMessages: n, MaxBytes: 1 << 30, Retention: time.Hour}})
	for range n {
		if _, err := roomy.Park(ctx, poison.Message{UUID: "old", Payload: make([]byte, 100)}); err != nil {
			t.Fatal(err)
		}
	}
	// The same store, with room for 5.
	s := newStore(t, c, redispoison.Config{KeyPrefix: prefix, Now: now,
		Limits: poison.Limits{MaxMessages: 5, MaxBytes: 1 << 30, Retention: time.Hour}})
	mu.Lock()
	clock = clock.Add(2 * time.Hour)
	mu.Unlock()
	tag := "{" + prefix + "}"
	// The first Park removes a batch and still finds 10 expired messages
	// in the way of the bound; the next removes them and parks.
	if _, err := s.Park(ctx, poison.Message{UUID: "new"}); !errors.Is(err, poison.ErrFull) {
		t.Fatalf("Park behind %d expired messages = %v, want ErrFull", n, err)
	}
	if left := c.ZCard(ctx, tag+"ids").Val(); left != 10 {
		t.Errorf("%d ids left after one sweep, want 10", left)
	}
	id, err := s.Park(ctx, poison.Message{UUID: "new", Payload: make([]byte, 7)})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, tag+"m:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != tag+"m:"+id {
		t.Errorf("message keys after the sweeps = %v, want only the new message's", keys)
	}
	if bytes := c.Get(ctx, tag+"bytes").Val(); bytes != "10" { // "new" (3) and 7 bytes of payload
		t.Errorf("bytes total = %s, want 10", bytes)
	}
	if got := c.ZCard(ctx, tag+"parked_at").Val(); got != 1 {
		t.Errorf("%d ids by parking time, want 1", got)
	}
}

// A lost id counter does not make Park reuse an id in the store.
func TestLostCounterDoesNotReuseIDs(t *testing.T) {
	c := testenv.Redis(t)
	ctx := testCtx(t)
	prefix := testenv.KeyPrefix(t)
	s := newStore(t, c, redispoison.Config{KeyPrefix: prefix})
	var ids []string
	for range 3 {
		id, err := s.Park(ctx, poison.Message{UUID: "a"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	c.Del(ctx, "{"+prefix+"}seq")
	id, err := s.Park(ctx, poison.Message{UUID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if id != "4" {
		t.Errorf("id after the counter was lost = %s, want 4 (after %v)", id, ids)
	}
	if m, err := s.Get(ctx, ids[0]); err != nil || m.UUID != "a" {
		t.Errorf("Get(%s) = %+v, %v", ids[0], m, err)
	}
}

// A failing server is an error, naming the operation, never ErrNotFound.
func TestUnreachable(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: testenv.ClosedAddr(t), DialTimeout: time.Second, DialerRetries: 1, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	s, err := redispoison.New(c, redispoison.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	_, err = s.Park(ctx, poison.Message{})
	check := func(op string, err error) {
		t.Helper()
		if err == nil || errors.Is(err, poison.ErrNotFound) || errors.Is(err, poison.ErrFull) || !strings.Contains(err.Error(), "redispoison") {
			t.Errorf("%s on a closed port = %v", op, err)
		}
	}
	check("Park", err)
	_, err = s.Get(ctx, "1")
	check("Get", err)
	_, _, err = s.List(ctx, poison.Filter{})
	check("List", err)
	_, err = s.Settle(ctx, "1", poison.Settlement{State: poison.Discarded})
	check("Settle", err)
	_, err = s.Summary(ctx)
	check("Summary", err)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Get(cancelled, "1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context = %v", err)
	}
}
