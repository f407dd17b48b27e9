// Package poisontest checks that a [poison.Store] keeps what the package
// promises: every store runs [Run].
package poisontest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/poison"
)

// Harness makes the stores under test.
type Harness struct {
	// New returns an empty store with limits, reading the time from now
	// (retention is measured against it).
	New func(t *testing.T, limits poison.Limits, now func() time.Time) poison.Store
}

// Run runs every case on stores from h.
func Run(t *testing.T, h Harness) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Harness)
	}{
		{"ParkKeepsTheMessage", testParkKeepsTheMessage},
		{"UnknownIDIsNotFound", testUnknownIDIsNotFound},
		{"ListPagesNewestFirst", testListPagesNewestFirst},
		{"ListFilters", testListFilters},
		{"SettleOnce", testSettleOnce},
		{"FullByCount", testFullByCount},
		{"FullByBytes", testFullByBytes},
		{"RetentionFreesRoom", testRetentionFreesRoom},
		{"Summary", testSummary},
		{"ConcurrentParks", testConcurrentParks},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, h) })
	}
}

func newClock() *testenv.Clock { return testenv.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) }

var roomy = poison.Limits{MaxMessages: 1000, MaxBytes: 1 << 20, Retention: time.Hour}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// message is a parked message of handler and class, parked at at.
func message(handler string, class poison.Class, at time.Time, n int) poison.Message {
	key := fmt.Sprintf("key-%d", n)
	return poison.Message{UUID: fmt.Sprintf("uuid-%d", n), Topic: handler + ".topic", Handler: handler,
		Reason: "boom " + key, Class: class, Key: key,
		Metadata: map[string]string{"idempotency_key": key, poison.ReasonKey: "boom " + key},
		Payload:  []byte(`{"n":` + fmt.Sprint(n) + `}`), ParkedAt: at, State: poison.Parked}
}

func mustPark(t *testing.T, s poison.Store, m poison.Message) string {
	t.Helper()
	id, err := s.Park(ctx(t), m)
	if err != nil {
		t.Fatalf("Park(%s): %v", m.UUID, err)
	}
	if id == "" {
		t.Fatalf("Park(%s) returned no id", m.UUID)
	}
	return id
}

func mustList(t *testing.T, s poison.Store, f poison.Filter) ([]poison.Message, string) {
	t.Helper()
	ms, next, err := s.List(ctx(t), f)
	if err != nil {
		t.Fatalf("List(%+v): %v", f, err)
	}
	return ms, next
}

func uuids(ms []poison.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.UUID
	}
	return out
}

func testParkKeepsTheMessage(t *testing.T, h Harness) {
	c := newClock()
	s := h.New(t, roomy, c.Now)
	m := message("charge", poison.Malformed, c.Now(), 1)
	m.Payload = []byte{0, 1, 2, 0xff} // not text
	id := mustPark(t, s, m)
	got, err := s.Get(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	m.ID = id
	if got.ID != id || got.UUID != m.UUID || got.Topic != m.Topic || got.Handler != m.Handler ||
		got.Reason != m.Reason || got.Class != m.Class || got.Key != m.Key || got.State != poison.Parked ||
		string(got.Payload) != string(m.Payload) || !got.ParkedAt.Equal(m.ParkedAt) ||
		got.SettledBy != "" || got.SettledAt != nil {
		t.Errorf("Get = %+v,\nwant %+v", got, m)
	}
	if len(got.Metadata) != len(m.Metadata) || got.Metadata["idempotency_key"] != m.Key {
		t.Errorf("metadata = %v, want %v", got.Metadata, m.Metadata)
	}
	other := mustPark(t, s, m) // the same message parked again (a redelivery) is a second entry
	if other == id {
		t.Errorf("a second Park returned the first one's id %s", id)
	}
}

func testUnknownIDIsNotFound(t *testing.T, h Harness) {
	s := h.New(t, roomy, newClock().Now)
	for _, id := range []string{"0", "nope", "99999999999999999999"} {
		if _, err := s.Get(ctx(t), id); !errors.Is(err, poison.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", id, err)
		}
		if _, err := s.Settle(ctx(t), id, poison.Settlement{State: poison.Discarded, By: "op", At: time.Now()}); !errors.Is(err, poison.ErrNotFound) {
			t.Errorf("Settle(%q) = %v, want ErrNotFound", id, err)
		}
	}
}

func testListPagesNewestFirst(t *testing.T, h Harness) {
	c := newClock()
	s := h.New(t, roomy, c.Now)
	var want []string
	for i := range 7 {
		mustPark(t, s, message("charge", poison.Permanent, c.Now(), i))
		want = append([]string{fmt.Sprintf("uuid-%d", i)}, want...)
		if i%2 == 0 {
			c.Add(time.Second) // some share a time: the order is the parking order still
		}
	}
	var got []string
	f := poison.Filter{Limit: 3}
	for page := 0; ; page++ {
		ms, next := mustList(t, s, f)
		if page < 2 && len(ms) != 3 {
			t.Fatalf("page %d has %d messages, want 3", page, len(ms))
		}
		got = append(got, uuids(ms)...)
		for _, m := range ms {
			if m.Payload != nil {
				t.Fatalf("List returned %s with its payload %q: a page leaves payloads out", m.UUID, m.Payload)
			}
		}
		if next == "" {
			break
		}
		if page > 3 {
			t.Fatal("List never ends")
		}
		f.After = next
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages = %v, want %v", got, want)
	}
	if ms, _ := mustList(t, s, poison.Filter{}); len(ms) != 7 {
		t.Errorf("default page has %d, want all 7", len(ms))
	}
}

func testListFilters(t *testing.T, h Harness) {
	c := newClock()
	s := h.New(t, roomy, c.Now)
	start := c.Now()
	mustPark(t, s, message("charge", poison.Malformed, c.Now(), 0))
	c.Add(time.Minute)
	mid := c.Now()
	mustPark(t, s, message("charge", poison.KeyReused, c.Now(), 1))
	id := mustPark(t, s, message("notify", poison.Malformed, c.Now(), 2))
	c.Add(time.Minute)
	mustPark(t, s, message("notify", poison.Permanent, c.Now(), 3))
	if _, err := s.Settle(ctx(t), id, poison.Settlement{State: poison.Discarded, By: "op", At: c.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    poison.Filter
		want []string
	}{
		{poison.Filter{}, []string{"uuid-3", "uuid-1", "uuid-0"}},
		{poison.Filter{Handler: "charge"}, []string{"uuid-1", "uuid-0"}},
		{poison.Filter{Topic: "notify.topic"}, []string{"uuid-3"}},
		{poison.Filter{Class: poison.Malformed}, []string{"uuid-0"}},
		{poison.Filter{Class: poison.Malformed, State: poison.All}, []string{"uuid-2", "uuid-0"}},
		{poison.Filter{State: poison.Discarded}, []string{"uuid-2"}},
		{poison.Filter{Since: mid}, []string{"uuid-3", "uuid-1"}},
		{poison.Filter{Until: mid}, []string{"uuid-0"}},
		{poison.Filter{Since: start, Until: mid.Add(time.Second), State: poison.All}, []string{"uuid-2", "uuid-1", "uuid-0"}},
		{poison.Filter{Handler: "nobody"}, nil},
	} {
		ms, next := mustList(t, s, tc.f)
		if got := uuids(ms); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("List(%+v) = %v, want %v", tc.f, got, tc.want)
		}
		if next != "" {
			t.Errorf("List(%+v) has a next page %q", tc.f, next)
		}
	}
}

func testSettleOnce(t *testing.T, h Harness) {
	c := newClock()
	s := h.New(t, roomy, c.Now)
	id := mustPark(t, s, message("charge", poison.Permanent, c.Now(), 1))
	at := c.Now().Add(time.Minute)
	got, err := s.Settle(ctx(t), id, poison.Settlement{State: poison.Redriven, By: "alice", At: at})
	if err != nil {
		t.Fatal(err)
	}
	if got.State != poison.Redriven || got.SettledBy != "alice" || got.SettledAt == nil || !got.SettledAt.Equal(at) {
		t.Errorf("Settle = %+v", got)
	}
	again, err := s.Settle(ctx(t), id, poison.Settlement{State: poison.Discarded, By: "bob", At: at})
	if !errors.Is(err, poison.ErrSettled) {
		t.Fatalf("second Settle = %v, want ErrSettled", err)
	}
	if again.State != poison.Redriven || again.SettledBy != "alice" {
		t.Errorf("second Settle returned %+v, want the message as alice left it", again)
	}
	if g, _ := s.Get(ctx(t), id); g.State != poison.Redriven || g.SettledBy != "alice" {
		t.Errorf("Get after Settle = %+v", g)
	}
	if ms, _ := mustList(t, s, poison.Filter{}); len(ms) != 0 {
		t.Errorf("a settled message is still listed as parked: %v", uuids(ms))
	}
}

func testFullByCount(t *testing.T, h Harness) {
	c := newClock()
	s := h.New(t, poison.Limits{MaxMessages: 3, MaxBytes: 1 << 20, Retention: time.Hour}, c.Now)
	for i := range 3 {
		mustPark(t, s, message("charge", poison.Permanent, c.Now(), i))
	}
	if _, err := s.Park(ctx(t), message("charge", poison.Permanent, c.Now(), 3)); !errors.Is(err, poison.ErrFull) {
		t.Fatalf("the 4th Park with room for 3 = %v, want ErrFull", err)
	}
	if ms, _ := mustList(t, s, poison.Filter{State: poison.All}); len(ms) != 3 {
		t.Errorf("%d messages kept, want 3", len(ms))
	}
}

func testFullByBytes(t *testing.T, h Harness) {
	c := newClock()
	big := message("charge", poison.Permanent, c.Now(), 0)
	big.Payload = make([]byte, 4000)
	s := h.New(t, poison.Limits{MaxMessages: 100, MaxBytes: 10_000, Retention: time.Hour}, c.Now)
	mustPark(t, s, big)
	mustPark(t, s, big)
	if _, err := s.Park(ctx(t), big); !errors.Is(err, poison.ErrFull) {
		t.Fatalf("a 3rd message of %d bytes in 10,000 = %v, want ErrFull", big.Size(), err)
	}
	mustPark(t, s, message("charge", poison.Permanent, c.Now(), 1)) // a small one still fits
}

func testRetentionFreesRoom(t *testing.T, h Harness) {
	c := newClock()
	s := h.New(t, poison.Limits{MaxMessages: 2, MaxBytes: 1 << 20, Retention: time.Hour}, c.Now)
	old := mustPark(t, s, message("charge", poison.Permanent, c.Now(), 0))
	c.Add(30 * time.Minute)
	mustPark(t, s, message("charge", poison.Permanent, c.Now(), 1))
	if _, err := s.Park(ctx(t), message("charge", poison.Permanent, c.Now(), 2)); !errors.Is(err, poison.ErrFull) {
		t.Fatalf("Park in a full store = %v, want ErrFull", err)
	}
	c.Add(31 * time.Minute) // the first is past its hour
	if _, err := s.Get(ctx(t), old); !errors.Is(err, poison.ErrNotFound) {
		t.Errorf("Get of a message past its retention = %v, want ErrNotFound", err)
	}
	mustPark(t, s, message("charge", poison.Permanent, c.Now(), 2))
	ms, _ := mustList(t, s, poison.Filter{})
	if got := uuids(ms); !slices.Equal(got, []string{"uuid-2", "uuid-1"}) {
		t.Errorf("after retention List = %v, want [uuid-2 uuid-1]", got)
	}
}

func testSummary(t *testing.T, h Harness) {
	c := newClock()
	s := h.New(t, roomy, c.Now)
	first := c.Now()
	mustPark(t, s, message("charge", poison.Malformed, c.Now(), 0))
	c.Add(time.Minute)
	mustPark(t, s, message("charge", poison.Malformed, c.Now(), 1))
	mustPark(t, s, message("notify", poison.Permanent, c.Now(), 2))
	id := mustPark(t, s, message("notify", poison.Malformed, c.Now(), 3))
	if _, err := s.Settle(ctx(t), id, poison.Settlement{State: poison.Redriven, By: "op", At: c.Now()}); err != nil {
		t.Fatal(err)
	}
	groups, err := s.Summary(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []poison.Group{
		{Handler: "charge", Class: poison.Malformed, Count: 2, Oldest: first, Newest: first.Add(time.Minute)},
		{Handler: "notify", Class: poison.Permanent, Count: 1, Oldest: first.Add(time.Minute), Newest: first.Add(time.Minute)},
	}
	if len(groups) != len(want) {
		t.Fatalf("Summary = %+v, want %+v in that order", groups, want)
	}
	for i := range want {
		g, w := groups[i], want[i]
		if g.Handler != w.Handler || g.Class != w.Class || g.Count != w.Count || !g.Oldest.Equal(w.Oldest) || !g.Newest.Equal(w.Newest) {
			t.Errorf("group %d = %+v, want %+v", i, g, w)
		}
	}
}

func testConcurrentParks(t *testing.T, h Harness) {
	c := newClock()
	s := h.New(t, poison.Limits{MaxMessages: 40, MaxBytes: 1 << 20, Retention: time.Hour}, c.Now)
	const n = 60
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ids[i], errs[i] = s.Park(ctx(t), message("charge", poison.Permanent, c.Now(), i)) })
	}
	wg.Wait()
	parked, full := map[string]bool{}, 0
	for i, err := range errs {
		switch {
		case errors.Is(err, poison.ErrFull):
			full++
		case err != nil:
			t.Fatalf("Park %d: %v", i, err)
		case parked[ids[i]]:
			t.Fatalf("two parks got id %s", ids[i])
		default:
			parked[ids[i]] = true
		}
	}
	if len(parked) != 40 || full != n-40 {
		t.Errorf("%d parked and %d full of %d racing into room for 40", len(parked), full, n)
	}
	var listed []poison.Message
	f := poison.Filter{Limit: 15}
	for {
		ms, next := mustList(t, s, f)
		listed = append(listed, ms...)
		if next == "" {
			break
		}
		f.After = next
	}
	if len(listed) != 40 {
		t.Errorf("List pages hold %d messages, want the 40 parked", len(listed))
	}
}
