package poison_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/onceflow/onceflow/poison"
	"github.com/onceflow/onceflow/poison/memory"
)

// A message as the poison topic's reader gets it is parked with its
// fields; one that names no class, or a class of its own, is permanent;
// text every store holds replaces invalid UTF-8 and NUL.
func TestFromMessage(t *testing.T) {
	msg := message.NewMessage("u-1", []byte{0xff, 0})
	msg.Metadata = message.Metadata{poison.TopicKey: "payments.requested", poison.HandlerKey: "charge",
		poison.ReasonKey: strings.Repeat("r", 5000), poison.ClassKey: "malformed", poison.KeyKey: "pay-1\x00\xff"}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("x", 3600))
	m := poison.FromMessage(msg, at)
	if m.Topic != "payments.requested" || m.Handler != "charge" || m.Class != poison.Malformed || m.State != poison.Parked ||
		m.Key != "pay-1\uFFFD\uFFFD" || string(m.Payload) != "\xff\x00" || !m.ParkedAt.Equal(at) || m.ParkedAt.Location() != time.UTC {
		t.Errorf("FromMessage = %+v", m)
	}
	if len(m.Reason) > 2100 || len(m.Metadata[poison.ReasonKey]) != 5000 {
		t.Errorf("reason %d bytes, metadata's %d: want the reason cut and the metadata whole", len(m.Reason), len(m.Metadata[poison.ReasonKey]))
	}
	msg.Metadata.Set(poison.ClassKey, "whatever-a-publisher-says")
	if m := poison.FromMessage(msg, at); m.Class != poison.Permanent {
		t.Errorf("an unknown class parked as %q, want permanent", m.Class)
	}
}

func newStore(t *testing.T, l poison.Limits) *memory.Store {
	t.Helper()
	s, err := memory.New(l, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The parker cuts a payload over MaxPayload (and such a message is never
// redriven), and holds a message it cannot park for Backoff before
// handing it back.
func TestParker(t *testing.T) {
	store := newStore(t, poison.Limits{MaxMessages: 1, MaxBytes: 1 << 20, Retention: time.Hour})
	var outcomes []string
	p := &poison.Parker{Store: store, MaxPayload: 4, Backoff: time.Millisecond, Parked: func(o string) { outcomes = append(outcomes, o) }}
	msg := message.NewMessage("u-1", []byte("0123456789"))
	msg.Metadata.Set(poison.TopicKey, "in")
	if err := p.Handle(msg); err != nil {
		t.Fatal(err)
	}
	ms, _, _ := store.List(context.Background(), poison.Filter{})
	m, _ := store.Get(context.Background(), ms[0].ID)
	if string(m.Payload) != "0123" || m.Metadata[poison.TruncatedKey] != "10" {
		t.Errorf("parked %q with metadata %v, want the first 4 bytes of 10", m.Payload, m.Metadata)
	}
	c := &poison.Console{Store: store, Topics: []string{"in"}}
	if err := c.Redrivable(m, true); !errors.Is(err, poison.ErrRefused) {
		t.Errorf("a cut message is redrivable with force: %v", err)
	}
	if err := p.Handle(message.NewMessage("u-2", nil)); !errors.Is(err, poison.ErrFull) {
		t.Errorf("Handle into a full store = %v, want ErrFull", err)
	}
	if strings.Join(outcomes, ",") != "parked,full" {
		t.Errorf("outcomes %v", outcomes)
	}
}

// What can be redriven: a parked message of a consumed topic; a reused
// key or a bad signature only with force; never one settled.
func TestRedrivable(t *testing.T) {
	c := &poison.Console{Topics: []string{"in"}}
	m := poison.Message{Topic: "in", State: poison.Parked, Class: poison.Permanent}
	for _, tc := range []struct {
		change    func(*poison.Message)
		plain, ok bool // without force, with force
	}{
		{func(*poison.Message) {}, true, true},
		{func(m *poison.Message) { m.Class = poison.KeyReused }, false, true},
		{func(m *poison.Message) { m.Class = poison.BadSignature }, false, true},
		{func(m *poison.Message) { m.Topic = "elsewhere" }, false, false},
		{func(m *poison.Message) { m.State = poison.Discarded }, false, false},
	} {
		m := m
		tc.change(&m)
		if got := c.Redrivable(m, false) == nil; got != tc.plain {
			t.Errorf("%+v: redrivable = %v, want %v", m, got, tc.plain)
		}
		if got := c.Redrivable(m, true) == nil; got != tc.ok {
			t.Errorf("%+v: redrivable with force = %v, want %v", m, got, tc.ok)
		}
	}
}

// A batch redrive sends every parked message it selects, payload and
// all, even though List leaves payloads out.
func TestRedriveAllSendsPayloads(t *testing.T) {
	store := newStore(t, poison.Limits{})
	ps := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 10}, watermill.NopLogger{})
	t.Cleanup(func() { _ = ps.Close() })
	out, err := ps.Subscribe(context.Background(), "in")
	if err != nil {
		t.Fatal(err)
	}
	p := &poison.Parker{Store: store}
	for _, payload := range []string{"a", "b"} {
		msg := message.NewMessage("u-"+payload, []byte(payload))
		msg.Metadata.Set(poison.TopicKey, "in")
		if err := p.Handle(msg); err != nil {
			t.Fatal(err)
		}
	}
	c := &poison.Console{Store: store, Publisher: ps, Topics: []string{"in"}}
	b, err := c.RedriveAll(context.Background(), poison.Filter{}, "alice", false, false)
	if err != nil || b.Done != 2 {
		t.Fatalf("RedriveAll = %+v, %v", b, err)
	}
	got := map[string]string{}
	for range 2 {
		select {
		case msg := <-out:
			got[msg.UUID] = string(msg.Payload)
			msg.Ack()
		case <-time.After(10 * time.Second):
			t.Fatal("a redriven message did not arrive")
		}
	}
	if got["u-a"] != "a" || got["u-b"] != "b" {
		t.Errorf("redriven %v", got)
	}
}
