package domain_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/middleware/idempotencykey"
)

func TestRoutesValidate(t *testing.T) {
	t.Parallel()
	handle := func(*message.Message) ([]*message.Message, error) { return nil, nil }
	consume := func(*message.Message) error { return nil }
	ok := domain.Route{Name: "charge", Consumes: "in", Produces: "out", Handle: handle}
	for _, tc := range []struct {
		name   string
		routes domain.Routes
		want   string // in the error; "" for none
	}{
		{"producer", domain.Routes{ok}, ""},
		{"consumer", domain.Routes{{Name: "notify", Consumes: "in", Consume: consume}}, ""},
		{"no name", domain.Routes{{Consumes: "in", Consume: consume}}, "the name must be"},
		{"colon in the name", domain.Routes{{Name: "a:b", Consumes: "in", Consume: consume}}, "the name must be"},
		{"upper case", domain.Routes{{Name: "Charge", Consumes: "in", Consume: consume}}, "the name must be"},
		{"name too long", domain.Routes{{Name: "a" + strings.Repeat("b", 63), Consumes: "in", Consume: consume}}, "the name must be"},
		{"same name twice", domain.Routes{ok, {Name: "charge", Consumes: "other", Consume: consume}}, "already used"},
		{"the HTTP face's scope", domain.Routes{{Name: idempotencykey.Scope, Consumes: "in", Consume: consume}}, "scope of the HTTP face"},
		{"no topic", domain.Routes{{Name: "notify", Consume: consume}}, "Consumes names no topic"},
		{"no function", domain.Routes{{Name: "notify", Consumes: "in"}}, "exactly one of Handle"},
		{"both functions", domain.Routes{{Name: "x", Consumes: "in", Produces: "out", Handle: handle, Consume: consume}}, "exactly one of Handle"},
		{"producer without output", domain.Routes{{Name: "x", Consumes: "in", Handle: handle}}, "Produces must name"},
		{"consumer with output", domain.Routes{{Name: "x", Consumes: "in", Produces: "out", Consume: consume}}, "Produces must be empty"},
		{"negative timeout", domain.Routes{{Name: "x", Consumes: "in", Consume: consume, Timeout: -time.Second}}, "Timeout -1s is negative"},
		{"negative concurrency", domain.Routes{{Name: "x", Consumes: "in", Consume: consume, Concurrency: -1}}, "Concurrency -1 is negative"},
		{"unknown mode", domain.Routes{{Name: "x", Consumes: "in", Consume: consume, Mode: "exactly"}}, `Mode "exactly" is not "lease" or "transaction"`},
		{"own concurrency", domain.Routes{{Name: "x", Consumes: "in", Consume: consume, Concurrency: 4}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.routes.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// Every mistake is reported at once, each naming its route.
func TestRoutesValidateReportsEveryRoute(t *testing.T) {
	t.Parallel()
	err := domain.Routes{{Name: "first"}, {Name: "second", Consumes: "in"}}.Validate()
	if err == nil {
		t.Fatal("Validate: nil")
	}
	for _, want := range []string{`route 0 ("first"): Consumes names no topic`, `route 1 ("second"): set exactly one`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v\nwant it to contain %q", err, want)
		}
	}
}

func TestRoutesTopicsAndOutputs(t *testing.T) {
	t.Parallel()
	handle := func(*message.Message) ([]*message.Message, error) { return nil, nil }
	consume := func(*message.Message) error { return nil }
	routes := domain.Routes{
		{Name: "a", Consumes: "t1", Produces: "t2", Handle: handle},
		{Name: "b", Consumes: "t2", Consume: consume},
		{Name: "c", Consumes: "t1", Produces: "t3", Handle: handle},
	}
	if got, want := routes.Topics(), []string{"t1", "t2", "t3"}; !slices.Equal(got, want) {
		t.Errorf("Topics() = %v, want %v", got, want)
	}
	if got := routes.Outputs(); len(got) != 2 || got["a"] != "t2" || got["c"] != "t3" {
		t.Errorf("Outputs() = %v, want map[a:t2 c:t3]", got)
	}
}
