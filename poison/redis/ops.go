package redispoison

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/poison"
)

// Park implements poison.Store. It runs parkScript: one round trip. The
// message is stored in the Parked state, whatever m.State says, at
// m.ParkedAt, or at Config.Now when that is zero; m.ID and the settlement
// fields are ignored. ErrFull, when it comes, says what the store holds.
func (s *Store) Park(ctx context.Context, m poison.Message) (string, error) {
	at := m.ParkedAt
	if at.IsZero() {
		at = s.now()
	}
	atMicros := at.UnixMicro()
	size := m.Size()
	args := []any{s.keys.msg, s.cutoff(), SweepBatch, s.limits.MaxMessages, s.limits.MaxBytes, size, atMicros,
		fieldUUID, m.UUID, fieldTopic, m.Topic, fieldHandler, m.Handler, fieldReason, m.Reason,
		fieldClass, string(m.Class), fieldKey, m.Key, fieldMetadata, encodeMetadata(m.Metadata),
		fieldPayload, m.Payload, fieldParkedAt, atMicros, fieldSize, size, fieldState, string(poison.Parked)}
	reply, err := parkScript.Run(ctx, s.client, []string{s.keys.seq, s.keys.ids, s.keys.parkedAt, s.keys.bytes}, args...).Int64Slice()
	if err != nil {
		return "", failed(ctx, "parking message "+m.UUID, err)
	}
	switch {
	case len(reply) == 2 && reply[0] == 1:
		return strconv.FormatInt(reply[1], 10), nil
	case len(reply) == 3 && reply[0] == 0:
		return "", fmt.Errorf("%w: it holds %d messages (at most %d) and %d bytes (at most %d), and message %s has %d",
			poison.ErrFull, reply[1], s.limits.MaxMessages, reply[2], s.limits.MaxBytes, m.UUID, size)
	}
	return "", fmt.Errorf("redispoison: parking message %s: unexpected script reply %v", m.UUID, reply)
}

// Get implements poison.Store: one HMGET.
func (s *Store) Get(ctx context.Context, id string) (poison.Message, error) {
	n, ok := parseID(id)
	if !ok {
		return poison.Message{}, poison.ErrNotFound
	}
	vals, err := s.client.HMGet(ctx, s.keys.message(n), messageFields...).Result()
	if err != nil {
		return poison.Message{}, failed(ctx, "reading message "+id, err)
	}
	m, found, err := decodeMessage(id, vals, s.cutoff())
	switch {
	case err != nil:
		return poison.Message{}, fmt.Errorf("redispoison: reading message %s: %w", id, err)
	case !found:
		return poison.Message{}, poison.ErrNotFound
	}
	return m, nil
}

// Settle implements poison.Store. It runs settleScript: one round trip.
// s.State must be Redriven or Discarded; a zero s.At means Config.Now.
func (s *Store) Settle(ctx context.Context, id string, st poison.Settlement) (poison.Message, error) {
	if st.State != poison.Redriven && st.State != poison.Discarded {
		return poison.Message{}, fmt.Errorf("redispoison: settling message %s: state %q is neither %s nor %s",
			id, st.State, poison.Redriven, poison.Discarded)
	}
	n, ok := parseID(id)
	if !ok {
		return poison.Message{}, poison.ErrNotFound
	}
	at := st.At
	if at.IsZero() {
		at = s.now()
	}
	args := append([]any{s.cutoff(), string(st.State), st.By, at.UnixMicro()}, anys(messageFields)...)
	reply, err := settleScript.Run(ctx, s.client, []string{s.keys.message(n)}, args...).Result()
	if err != nil {
		return poison.Message{}, failed(ctx, "settling message "+id, err)
	}
	if reply == int64(0) {
		return poison.Message{}, poison.ErrNotFound
	}
	r, ok := reply.([]any)
	if !ok || len(r) != 2 {
		return poison.Message{}, fmt.Errorf("redispoison: settling message %s: unexpected script reply %#v", id, reply)
	}
	vals, _ := r[1].([]any)
	m, found, err := decodeMessage(id, vals, 0) // the script judged retention
	if err == nil && !found {
		err = errors.New("the script replied with no message")
	}
	if err != nil {
		return poison.Message{}, fmt.Errorf("redispoison: settling message %s: %w", id, err)
	}
	switch r[0] {
	case int64(1):
		return m, nil
	case int64(2):
		return m, poison.ErrSettled
	}
	return poison.Message{}, fmt.Errorf("redispoison: settling message %s: unexpected script outcome %#v", id, r[0])
}

// List implements poison.Store. It scans ids newest first (below f.After),
// a chunk of ids per round trip with the fields f looks at, starting with
// f.PageSize()+1 ids and doubling up to scanChunk, until it has one
// matching message more than a page, or no ids are left; then it fetches
// the page's messages in one more round trip. An unfiltered page is
// O(page); a filter that few messages match scans up to all of them. A
// message settled between the two steps so that f no longer selects it is
// left out of the page. A cursor that is not an id is an error.
func (s *Store) List(ctx context.Context, f poison.Filter) ([]poison.Message, string, error) {
	bound := "+inf"
	if f.After != "" {
		if _, ok := parseID(f.After); !ok {
			return nil, "", fmt.Errorf("redispoison: listing: cursor %q is not one List returned", f.After)
		}
		bound = "(" + f.After
	}
	page, cutoff := f.PageSize(), s.cutoff()
	var ids []string // the matching ids, newest first: at most page+1
	for chunk := page + 1; len(ids) <= page; chunk = min(2*chunk, scanChunk) {
		rows, err := s.scan(ctx, bound, chunk, metaFields)
		if err != nil {
			return nil, "", failed(ctx, "listing", err)
		}
		for _, r := range rows {
			if m, ok := decodeMeta(r, cutoff); ok && f.Matches(m) {
				ids = append(ids, r.id)
				if len(ids) > page {
					break
				}
			}
		}
		if len(rows) < chunk {
			break // no ids left
		}
		bound = "(" + rows[len(rows)-1].id
	}
	next := ""
	if len(ids) > page {
		ids = ids[:page]
		next = ids[page-1]
	}
	ms, err := s.fetch(ctx, ids, cutoff)
	if err != nil {
		return nil, "", failed(ctx, "listing", err)
	}
	out := make([]poison.Message, 0, len(ms))
	for _, m := range ms {
		if f.Matches(m) {
			out = append(out, m)
		}
	}
	return out, next, nil
}

// Summary implements poison.Store. It scans every id in the store,
// scanChunk per round trip, reading four small fields of each message:
// O(all), the cost of a Summary.
func (s *Store) Summary(ctx context.Context) ([]poison.Group, error) {
	type group struct{ handler, class string }
	groups := map[group]*poison.Group{}
	cutoff := s.cutoff()
	for bound := "+inf"; ; {
		rows, err := s.scan(ctx, bound, scanChunk, metaFields)
		if err != nil {
			return nil, failed(ctx, "summing up", err)
		}
		for _, r := range rows {
			m, ok := decodeMeta(r, cutoff)
			if !ok || m.State != poison.Parked {
				continue
			}
			k := group{m.Handler, string(m.Class)}
			g := groups[k]
			if g == nil {
				g = &poison.Group{Handler: m.Handler, Class: m.Class, Oldest: m.ParkedAt, Newest: m.ParkedAt}
				groups[k] = g
			}
			g.Count++
			if m.ParkedAt.Before(g.Oldest) {
				g.Oldest = m.ParkedAt
			}
			if m.ParkedAt.After(g.Newest) {
				g.Newest = m.ParkedAt
			}
		}
		if len(rows) < scanChunk {
			break
		}
		bound = "(" + rows[len(rows)-1].id
	}
	out := make([]poison.Group, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b poison.Group) int {
		return cmp.Or(cmp.Compare(a.Handler, b.Handler), cmp.Compare(a.Class, b.Class))
	})
	return out, nil
}

// row is one id scanScript read, with its fields' values.
type row struct {
	id   string
	vals []any
}

// scan runs scanScript: at most n ids below bound, newest first, with
// fields.
func (s *Store) scan(ctx context.Context, bound string, n int, fields []string) ([]row, error) {
	args := append([]any{bound, n, s.keys.msg}, anys(fields)...)
	reply, err := scanScript.Run(ctx, s.client, []string{s.keys.ids}, args...).Slice()
	if err != nil {
		return nil, err
	}
	rows := make([]row, len(reply))
	for i, r := range reply {
		vals, ok := r.([]any)
		if !ok || len(vals) != len(fields)+1 {
			return nil, fmt.Errorf("unexpected scan reply %#v", r)
		}
		id, ok := vals[0].(string)
		if !ok {
			return nil, fmt.Errorf("unexpected scan reply %#v", r)
		}
		rows[i] = row{id: id, vals: vals[1:]}
	}
	return rows, nil
}

// fetch reads the messages ids name without their payloads, in one
// pipelined round trip, leaving out those that are gone or past cutoff.
func (s *Store) fetch(ctx context.Context, ids []string, cutoff int64) ([]poison.Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.SliceCmd, len(ids))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HMGet(ctx, s.keys.msg+id, listFields...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ms := make([]poison.Message, 0, len(ids))
	for i, c := range cmds {
		m, found, err := decodeMessage(ids[i], c.Val(), cutoff)
		if err != nil {
			return nil, fmt.Errorf("message %s: %w", ids[i], err)
		}
		if found {
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// decodeMessage is the message id of the values of messageFields, found
// false when the message is absent or was parked before cutoff.
func decodeMessage(id string, vals []any, cutoff int64) (m poison.Message, found bool, err error) {
	if len(vals) != len(messageFields) {
		return m, false, fmt.Errorf("%d fields read, want %d", len(vals), len(messageFields))
	}
	d := decoder{vals: vals}
	m = poison.Message{ID: id, UUID: d.str(0), Topic: d.str(1), Handler: d.str(2), Reason: d.str(3),
		Class: poison.Class(d.str(4)), Key: d.str(5)}
	md, payload := d.str(6), d.str(7)
	at, ok := d.micros(8)
	if !ok {
		return m, false, d.err // absent, unless the field is malformed
	}
	if at < cutoff {
		return m, false, nil
	}
	m.ParkedAt = time.UnixMicro(at).UTC()
	m.State = poison.State(d.str(9))
	m.SettledBy = d.str(10)
	if sa, ok := d.micros(11); ok {
		t := time.UnixMicro(sa).UTC()
		m.SettledAt = &t
	}
	if vals[7] != nil {
		m.Payload = []byte(payload)
	}
	if m.Metadata, err = decodeMetadata(md); err != nil {
		return m, false, err
	}
	return m, true, d.err
}

// decodeMeta is the part of a message a Filter looks at, from the values
// of metaFields; false when the message is absent or was parked before
// cutoff.
func decodeMeta(r row, cutoff int64) (poison.Message, bool) {
	d := decoder{vals: r.vals}
	at, ok := d.micros(4)
	if !ok || at < cutoff {
		return poison.Message{}, false
	}
	return poison.Message{ID: r.id, Handler: d.str(0), Topic: d.str(1), Class: poison.Class(d.str(2)),
		State: poison.State(d.str(3)), ParkedAt: time.UnixMicro(at).UTC()}, true
}

// decoder reads hash field values as go-redis returns them: a string, or
// nil for a field the hash lacks.
type decoder struct {
	vals []any
	err  error
}

func (d *decoder) str(i int) string {
	s, _ := d.vals[i].(string)
	return s
}

// micros reads a time in Unix microseconds, false when the field is
// absent or (recorded in d.err) not a number.
func (d *decoder) micros(i int) (int64, bool) {
	s, ok := d.vals[i].(string)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		d.err = fmt.Errorf("field %d is not a time: %q", i, s)
		return 0, false
	}
	return n, true
}

// failed is the error of op that failed with err: one that matches the
// context's error when ctx is done (the client may report its deadline as
// a network timeout), and names op.
func failed(ctx context.Context, op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("redispoison: %s: %w", op, err)
	}
	ctxErr := ctx.Err()
	if d, ok := ctx.Deadline(); ctxErr == nil && ok && !time.Now().Before(d) {
		ctxErr = context.DeadlineExceeded
	}
	if ctxErr != nil {
		return fmt.Errorf("redispoison: %s: %w: %w", op, ctxErr, err)
	}
	return fmt.Errorf("redispoison: %s: %w", op, err)
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
