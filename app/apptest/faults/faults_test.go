package faults_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/app/apptest/faults"
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores/memory"
)

// handler records a side effect per run, as a ledger write would.
type handler struct{ effects int }

func (h *handler) handle(*message.Message) ([]*message.Message, error) {
	h.effects++
	return []*message.Message{message.NewMessage("out", nil)}, nil
}

// A probability of 1 always fails and 0 never does, so the switches can be
// checked without chance: failing before leaves no effect, failing after
// leaves it and drops the produced messages.
func TestMiddlewareSwitches(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after float64
		wantErr       bool
		wantEffects   int
	}{
		{"off", 0, 0, false, 1},
		{"fail before", 1, 0, true, 0},
		{"fail after", 0, 1, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h handler
			out, err := faults.Middleware(faults.Config{FailBefore: tc.before, FailAfter: tc.after})(h.handle)(message.NewMessage("in", nil))
			if got := errors.Is(err, faults.ErrInjected); got != tc.wantErr {
				t.Errorf("error = %v, want injected: %v", err, tc.wantErr)
			}
			if h.effects != tc.wantEffects {
				t.Errorf("%d effects, want %d", h.effects, tc.wantEffects)
			}
			if tc.wantErr && out != nil {
				t.Errorf("a failed attempt returned %d messages", len(out))
			}
		})
	}
}

// CHAOS_DELAY sleeps before the handler and gives up with the context.
func TestMiddlewareDelay(t *testing.T) {
	var h handler
	msg := message.NewMessage("in", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	msg.SetContext(ctx)
	_, err := faults.Middleware(faults.Config{Delay: time.Hour})(h.handle)(msg)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want the context's deadline", err)
	}
	if h.effects != 0 {
		t.Errorf("%d effects after a cancelled delay, want 0", h.effects)
	}
}

// CHAOS_NO_EFFECT_KEYS takes the receiver's effect keys away from the
// handler's context, inside a receiver's run.
func TestMiddlewareNoEffectKeys(t *testing.T) {
	store := memory.New(memory.Config{})
	t.Cleanup(func() { _ = store.Close() })
	r, err := receiver.New(receiver.Config{Store: store, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []bool{false, true} {
		var keyed bool
		h := faults.Middleware(faults.Config{NoEffectKeys: off})(func(msg *message.Message) ([]*message.Message, error) {
			_, keyed = receiver.EffectKey(msg.Context(), "")
			return nil, nil
		})
		msg := message.NewMessage("1", nil)
		_, err := r.Execute(t.Context(), "charge", fmt.Sprintf("request-%v", off), nil, func(ctx context.Context) ([]byte, error) {
			msg.SetContext(ctx)
			_, err := h(msg)
			return nil, err
		})
		if err != nil {
			t.Fatal(err)
		}
		if keyed == off {
			t.Errorf("CHAOS_NO_EFFECT_KEYS=%v: the handler had an effect key: %v", off, keyed)
		}
	}
}

// Wrap puts the switches around every route, those that return messages
// and those that return none, and leaves a domain alone with every switch
// off.
func TestWrap(t *testing.T) {
	var produce, consume handler
	d := domain.Domain{Name: "d", Open: func(context.Context, domain.Deps) (*domain.Parts, error) {
		return &domain.Parts{Routes: domain.Routes{
			{Name: "a", Consumes: "in", Produces: "out", Handle: produce.handle},
			{Name: "b", Consumes: "out", Consume: func(m *message.Message) error { _, err := consume.handle(m); return err }},
		}}, nil
	}}
	parts, err := faults.Wrap(d, faults.Config{FailAfter: 1}).Open(context.Background(), domain.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parts.Routes[0].Handle(message.NewMessage("1", nil)); !errors.Is(err, faults.ErrInjected) {
		t.Errorf("route a: %v, want the injected fault", err)
	}
	if err := parts.Routes[1].Consume(message.NewMessage("2", nil)); !errors.Is(err, faults.ErrInjected) {
		t.Errorf("route b: %v, want the injected fault", err)
	}
	if produce.effects != 1 || consume.effects != 1 {
		t.Errorf("effects %d and %d, want each handler run once before its fault", produce.effects, consume.effects)
	}
	if off := faults.Wrap(d, faults.Config{}); off.Open == nil || produce.effects != 1 {
		t.Fatal("Wrap with every switch off changed the domain")
	}
}

// The switches are off by default, checked, and refused in production.
func TestFromEnv(t *testing.T) {
	c, err := faults.FromEnv([]string{"ENV=production"})
	if err != nil || c.Enabled() {
		t.Errorf("ENV=production without CHAOS_*: %+v, %v; want every switch off", c, err)
	}
	c, err = faults.FromEnv([]string{"ENV=staging", "CHAOS_FAIL_BEFORE=0.3", "CHAOS_DELAY=5ms"})
	if err != nil || !c.Enabled() || c.FailBefore != 0.3 || c.Delay != 5*time.Millisecond {
		t.Errorf("CHAOS_* outside production = %+v, %v", c, err)
	}
	for _, tc := range []struct {
		environ []string
		want    string
	}{
		{[]string{"CHAOS_FAIL_BEFORE=1.5"}, `CHAOS_FAIL_BEFORE=1.5 must be a probability from 0 to 1`},
		{[]string{"CHAOS_FAIL_AFTER=-0.1"}, `CHAOS_FAIL_AFTER=-0.1 must be a probability from 0 to 1`},
		{[]string{"CHAOS_FAIL_AFTER=NaN"}, `CHAOS_FAIL_AFTER=NaN must be a probability from 0 to 1`},
		{[]string{"CHAOS_DELAY=-1s"}, `CHAOS_DELAY=-1s must be zero or a positive duration`},
		{[]string{"ENV=production", "CHAOS_FAIL_BEFORE=0.3"}, `CHAOS_FAIL_BEFORE is a test aid and is refused with ENV=production`},
		{[]string{"ENV=production", "CHAOS_FAIL_AFTER=1"}, `CHAOS_FAIL_AFTER is a test aid and is refused with ENV=production`},
		{[]string{"ENV=production", "CHAOS_DELAY=10ms"}, `CHAOS_DELAY is a test aid and is refused with ENV=production`},
		{[]string{"ENV=production", "CHAOS_NO_EFFECT_KEYS=true"}, `CHAOS_NO_EFFECT_KEYS is a test aid and is refused with ENV=production`},
	} {
		if _, err := faults.FromEnv(tc.environ); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.environ, err, tc.want)
		}
	}
}
