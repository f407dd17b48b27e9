// Package faults injects failures around a domain's message handlers: the
// handler faults of the fault suite (make chaos) and of the service's
// tests. It is a test aid that the production binary (cmd/onceflow) does
// not contain: a test wraps its domain with it, and only the fault suite's
// own service binary reads its switches, CHAOS_*, from the environment
// (FromEnv).
package faults

import (
	"errors"
	"fmt"
	"time"

	"github.com/caarlos0/env/v11"
)

// ErrInjected is the failure the switches inject.
var ErrInjected = errors.New("fault injected by CHAOS_FAIL_BEFORE or CHAOS_FAIL_AFTER")

// Config is the fault switches. The zero value injects nothing.
type Config struct {
	// FailBefore, a probability from 0 to 1, makes a handler attempt
	// fail without running the handler.
	FailBefore float64 `env:"CHAOS_FAIL_BEFORE"`
	// FailAfter, a probability from 0 to 1, makes a handler attempt fail
	// after the handler ran and succeeded: its side effects are done,
	// and the attempt reports a failure, as a crash between an effect and
	// its acknowledgement would.
	FailAfter float64 `env:"CHAOS_FAIL_AFTER"`
	// Delay makes each attempt sleep this long before the handler runs.
	Delay time.Duration `env:"CHAOS_DELAY"`
	// NoEffectKeys takes the receiver's effect keys away from every
	// attempt ([receiver.WithoutEffectKeys]): the handlers' effects
	// carry no key, as they would in a service that does not hand them
	// on, so a run measures the window the keys close.
	NoEffectKeys bool `env:"CHAOS_NO_EFFECT_KEYS"`
	// Env names the deployment (ENV); the switches are refused with
	// ENV=production.
	Env string `env:"ENV"`
}

// FromEnv reads the switches from environ (os.Environ's form) and checks
// them.
func FromEnv(environ []string) (Config, error) {
	var c Config
	if err := env.ParseWithOptions(&c, env.Options{Environment: env.ToMap(environ)}); err != nil {
		return Config{}, err
	}
	return c, c.Validate()
}

// Validate checks the switches: probabilities from 0 to 1, a delay of zero
// or more, and none of them with ENV=production.
func (c Config) Validate() error {
	for _, p := range []struct {
		name  string
		value float64
	}{{"CHAOS_FAIL_BEFORE", c.FailBefore}, {"CHAOS_FAIL_AFTER", c.FailAfter}} {
		if !(p.value >= 0 && p.value <= 1) {
			return fmt.Errorf("%s=%v must be a probability from 0 to 1", p.name, p.value)
		}
	}
	if c.Delay < 0 {
		return fmt.Errorf("CHAOS_DELAY=%v must be zero or a positive duration such as 50ms", c.Delay)
	}
	if c.Env == "production" && c.Enabled() {
		name := "CHAOS_DELAY"
		switch {
		case c.NoEffectKeys:
			name = "CHAOS_NO_EFFECT_KEYS"
		case c.FailBefore > 0:
			name = "CHAOS_FAIL_BEFORE"
		case c.FailAfter > 0:
			name = "CHAOS_FAIL_AFTER"
		}
		return fmt.Errorf("%s is a test aid and is refused with ENV=production: unset it", name)
	}
	return nil
}

// Enabled reports whether any switch is on.
func (c Config) Enabled() bool {
	return c.FailBefore > 0 || c.FailAfter > 0 || c.Delay > 0 || c.NoEffectKeys
}
