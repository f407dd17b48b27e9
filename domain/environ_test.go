package domain_test

import (
	"context"
	"testing"

	"github.com/onceflow/onceflow/domain"
)

func TestGetenv(t *testing.T) {
	t.Parallel()
	deps := domain.Deps{Environ: []string{"A=1", "B=", "A=2", "C=x=y", "NOEQUALS"}}
	for key, want := range map[string]string{"A": "2", "B": "", "C": "x=y", "D": "", "NOEQUALS": ""} {
		if got := deps.Getenv(key); got != want {
			t.Errorf("Deps.Getenv(%q) = %q, want %q", key, got, want)
		}
		if got := (domain.CommandEnv{Environ: deps.Environ}).Getenv(key); got != want {
			t.Errorf("CommandEnv.Getenv(%q) = %q, want %q", key, got, want)
		}
	}
	if got := (domain.Deps{}).Getenv("A"); got != "" {
		t.Errorf("the zero Deps: Getenv = %q, want empty", got)
	}
}

// The service hands its environment to the domain's Open; a domain that
// reads none of it sees no difference.
func TestWithEnviron(t *testing.T) {
	t.Parallel()
	var seen string
	d := domain.Domain{Name: "d", Open: func(_ context.Context, deps domain.Deps) (*domain.Parts, error) {
		seen = deps.Getenv("SETTING")
		return &domain.Parts{}, nil
	}}
	environ := []string{"SETTING=on"}
	wrapped := d.WithEnviron(environ)
	environ[0] = "SETTING=changed" // the domain keeps what it was given
	if _, err := wrapped.Open(context.Background(), domain.Deps{}); err != nil {
		t.Fatal(err)
	}
	if seen != "on" {
		t.Errorf("Open saw SETTING=%q, want on", seen)
	}
	if err := (domain.Domain{Name: "d"}).WithEnviron(environ).Validate(); err == nil {
		t.Error("a domain without Open passed Validate after WithEnviron")
	}
}
