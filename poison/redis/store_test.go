package redispoison_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/poison"
	"github.com/onceflow/onceflow/poison/poisontest"
	redispoison "github.com/onceflow/onceflow/poison/redis"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.StopRedisCluster()
	os.Exit(code)
}

func TestConformance(t *testing.T) {
	for name, client := range map[string]func(testing.TB) redis.UniversalClient{
		"single node": func(t testing.TB) redis.UniversalClient { return testenv.Redis(t) },
		"cluster":     func(t testing.TB) redis.UniversalClient { return testenv.RedisCluster(t) },
	} {
		t.Run(name, func(t *testing.T) {
			poisontest.Run(t, poisontest.Harness{
				New: func(t *testing.T, limits poison.Limits, now func() time.Time) poison.Store {
					return newStore(t, client(t), redispoison.Config{Limits: limits, Now: now})
				},
			})
		})
	}
}

// newStore returns a store on c with cfg, under a key prefix of its own
// (unless cfg names one) whose keys are deleted when t ends.
func newStore(t testing.TB, c redis.UniversalClient, cfg redispoison.Config) *redispoison.Store {
	t.Helper()
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = testenv.KeyPrefix(t)
	}
	deleteOnCleanup(t, c, "{"+cfg.KeyPrefix+"}")
	s, err := redispoison.New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// deleteOnCleanup deletes, when t ends, the keys of c that start with
// prefix (a glob pattern without its "*"), on every master of a Cluster.
// They are one store's keys, so they share a slot and one DEL takes many.
func deleteOnCleanup(t testing.TB, c redis.UniversalClient, prefix string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		del := func(ctx context.Context, n *redis.Client) error {
			var cursor uint64
			for {
				keys, next, err := n.Scan(ctx, cursor, prefix+"*", 10000).Result()
				if err != nil {
					return err
				}
				if len(keys) > 0 {
					if err := n.Del(ctx, keys...).Err(); err != nil {
						return err
					}
				}
				if cursor = next; cursor == 0 {
					return nil
				}
			}
		}
		var err error
		switch c := c.(type) {
		case *redis.ClusterClient:
			err = c.ForEachMaster(ctx, del)
		case *redis.Client:
			err = del(ctx, c)
		default:
			err = fmt.Errorf("cannot clean up after a %T", c)
		}
		if err != nil {
			t.Errorf("deleting keys %s*: %v", prefix, err)
		}
	})
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// base is the time the many-message tests park at.
var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// handlers are the handlers the many-message tests spread messages over:
// message i has handlers[i%4].
var handlers = []string{"charge", "notify", "refund", "ship"}

// parkMany parks n messages on s, message i (uuid-i) parked at base + i
// seconds, and returns their ids.
func parkMany(t testing.TB, s poison.Store, n int) []string {
	t.Helper()
	ctx := testCtx(t)
	ids := make([]string, n)
	for i := range n {
		h := handlers[i%len(handlers)]
		m := poison.Message{UUID: fmt.Sprintf("uuid-%d", i), Topic: h + ".topic", Handler: h, Reason: "boom",
			Class: poison.Permanent, Key: fmt.Sprintf("key-%d", i), Metadata: map[string]string{"idempotency_key": fmt.Sprintf("key-%d", i)},
			Payload: []byte(fmt.Sprintf(`{"n":%d}`, i)), ParkedAt: base.Add(time.Duration(i) * time.Second), State: poison.Parked}
		id, err := s.Park(ctx, m)
		if err != nil {
			t.Fatalf("Park %d: %v", i, err)
		}
		ids[i] = id
	}
	return ids
}

// wantUUIDs are the uuids of messages i for i from hi down to lo, keeping
// those keep selects.
func wantUUIDs(hi, lo int, keep func(i int) bool) []string {
	var out []string
	for i := hi; i >= lo; i-- {
		if keep(i) {
			out = append(out, fmt.Sprintf("uuid-%d", i))
		}
	}
	return out
}

func uuidsOf(ms []poison.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.UUID
	}
	return out
}

func every(int) bool { return true }

// Ten thousand parked messages page right from the first page to the
// last, unfiltered and filtered, through the cursors List returns.
func TestManyMessagesPage(t *testing.T) {
	const n = 10_000
	now := base.Add(n * time.Second)
	c := testenv.Redis(t)
	s := newStore(t, c, redispoison.Config{Now: func() time.Time { return now }})
	ids := parkMany(t, s, n)
	ctx := testCtx(t)

	// One List first loads the scan script: a server that did not know it
	// would take an EVAL besides the EVALSHA.
	if _, _, err := s.List(ctx, poison.Filter{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	c.AddHook(rec)
	first, next, err := s.List(ctx, poison.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	// The first page costs O(page): one script reading page+1 ids, and a
	// pipeline reading the page's messages.
	if cmds := rec.take(); len(cmds) != 1+poison.DefaultLimit ||
		fmt.Sprint(cmds[0][0]) != "evalsha" || fmt.Sprint(cmds[0][4:6]) != fmt.Sprint([]any{"+inf", poison.DefaultLimit + 1}) {
		t.Errorf("the first page took commands %v: want a scan of %d ids and %d reads", cmds, poison.DefaultLimit+1, poison.DefaultLimit)
	}
	if got, want := uuidsOf(first), wantUUIDs(n-1, n-poison.DefaultLimit, every); !slices.Equal(got, want) {
		t.Fatalf("first page = %v,\nwant %v", got, want)
	}
	if want := ids[n-poison.DefaultLimit]; next != want {
		t.Errorf("first page's cursor = %q, want %q, the id of its last message", next, want)
	}
	if first[0].ID != ids[n-1] || first[0].Payload != nil ||
		!first[0].ParkedAt.Equal(base.Add((n-1)*time.Second)) {
		t.Errorf("first message = %+v", first[0])
	}

	for _, tc := range []struct {
		name  string
		f     poison.Filter
		pages int // how many pages the walk takes
		deep  int // a page deep in to check in full
		want  []string
	}{
		{"every message, biggest pages", poison.Filter{Limit: poison.MaxLimit}, 20, 13, wantUUIDs(n-1, 0, every)},
		{"one handler of four", poison.Filter{Handler: "refund", Limit: 100}, 25, 17,
			wantUUIDs(n-1, 0, func(i int) bool { return i%4 == 2 })},
		{"a window in time", poison.Filter{Since: base.Add(2000 * time.Second), Until: base.Add(3000 * time.Second), Limit: 30}, 34, 20,
			wantUUIDs(2999, 2000, every)},
		{"a topic and a window", poison.Filter{Topic: "ship.topic", Until: base.Add(400 * time.Second), Limit: 7}, 15, 9,
			wantUUIDs(399, 0, func(i int) bool { return i%4 == 3 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			f := tc.f
			for page := 1; ; page++ {
				ms, next, err := s.List(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if page == tc.deep {
					from := (page - 1) * f.Limit
					if want := tc.want[from : from+f.Limit]; !slices.Equal(uuidsOf(ms), want) {
						t.Errorf("page %d = %v,\nwant %v", page, uuidsOf(ms), want)
					}
				}
				if next != "" && (len(ms) != f.Limit || next != ms[len(ms)-1].ID) {
					t.Fatalf("page %d has %d messages and cursor %q: want a full page, and the id of its last message", page, len(ms), next)
				}
				got = append(got, uuidsOf(ms)...)
				if next == "" {
					if page != tc.pages {
						t.Errorf("%d pages, want %d", page, tc.pages)
					}
					break
				}
				if page > tc.pages {
					t.Fatalf("more than %d pages", tc.pages)
				}
				f.After = next
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("the pages hold %d messages, want %d (first differences: %v)", len(got), len(tc.want), firstDiff(got, tc.want))
			}
		})
	}

	// Settled messages drop out of the default listing, deep in too.
	for i := 5000; i < 5100; i++ {
		if _, err := s.Settle(ctx, ids[i], poison.Settlement{State: poison.Discarded, By: "op", At: now}); err != nil {
			t.Fatal(err)
		}
	}
	ms, _, err := s.List(ctx, poison.Filter{After: ids[5120], Limit: 40})
	if err != nil {
		t.Fatal(err)
	}
	if want := append(wantUUIDs(5119, 5100, every), wantUUIDs(4999, 4980, every)...); !slices.Equal(uuidsOf(ms), want) {
		t.Errorf("page across settled messages = %v,\nwant %v", uuidsOf(ms), want)
	}
	groups, err := s.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, g := range groups {
		total += g.Count
	}
	if len(groups) != len(handlers) || total != n-100 {
		t.Errorf("Summary = %+v, want %d groups of %d messages in all", groups, len(handlers), n-100)
	}
}

// recorder is a go-redis hook that records the commands a client sends.
type recorder struct {
	mu   sync.Mutex
	cmds [][]any
}

func (r *recorder) take() [][]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmds := r.cmds
	r.cmds = nil
	return cmds
}

// add records cmds, leaving out those that set up a new connection.
func (r *recorder) add(cmds ...redis.Cmder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cmds {
		switch c.Name() {
		case "hello", "client", "auth", "select", "ping":
			continue
		}
		r.cmds = append(r.cmds, c.Args())
	}
}

func (r *recorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.add(cmd)
		return next(ctx, cmd)
	}
}

func (r *recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.add(cmds...)
		return next(ctx, cmds)
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d: %s, want %s", i, got[i], want[i])
		}
	}
	return "one is a prefix of the other"
}

// BenchmarkList lists the first page of 50 of 10,000 parked messages,
// unfiltered and with a filter one in four of them match.
func BenchmarkList(b *testing.B) {
	const n = 10_000
	now := base.Add(n * time.Second)
	s := newStore(b, testenv.Redis(b), redispoison.Config{Now: func() time.Time { return now }})
	parkMany(b, s, n)
	ctx := testCtx(b)
	for _, bc := range []struct {
		name string
		f    poison.Filter
	}{
		{"first page of 50", poison.Filter{}},
		{"first page of 50, one handler of four", poison.Filter{Handler: "refund"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				ms, _, err := s.List(ctx, bc.f)
				if err != nil {
					b.Fatal(err)
				}
				if len(ms) != poison.DefaultLimit {
					b.Fatalf("%d messages, want %d", len(ms), poison.DefaultLimit)
				}
			}
		})
	}
}
