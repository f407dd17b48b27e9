package testenv

import (
	"strings"
	"testing"
	"time"
)

// StartupFails runs start, a service's start-up, and requires it to fail
// within limit with an error of one line that contains want and never
// secret (the password of a URL the service was given; "" for none). It
// logs how long the start-up took to fail.
func StartupFails(t testing.TB, start func() error, want, secret string, limit time.Duration) {
	t.Helper()
	begin := time.Now()
	err := start()
	took := time.Since(begin)
	if err == nil {
		t.Fatal("the service started, want it to refuse")
	}
	if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "\n") || (secret != "" && strings.Contains(msg, secret)) {
		t.Errorf("error %q: want one line containing %q, without the password", msg, want)
	}
	if took > limit {
		t.Errorf("start-up failed after %v, want within %v", took, limit)
	}
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
}
