package middleware

import (
	"strings"
	"testing"
	"time"
)

func TestNewReceiverDefaults(t *testing.T) {
	r, err := NewReceiver(Config{Store: newMemory(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := r.cfg
	if r.Lease() != DefaultLease || c.TTL != DefaultTTL || c.Wait != DefaultWait ||
		c.OnInProgress != Reject || c.OnStoreError != FailClosed || c.Observer == nil || c.Logger == nil {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

func TestNewReceiverValidates(t *testing.T) {
	store := newMemory(t)
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no store", Config{}, "missing store"},
		{"negative lease", Config{Store: store, Lease: -time.Second}, "lease -1s must be at least 1ms"},
		{"lease too short to heartbeat", Config{Store: store, Lease: time.Microsecond}, "lease 1µs must be at least 1ms"},
		{"negative ttl", Config{Store: store, TTL: -time.Second}, "ttl -1s must be positive"},
		{"negative wait", Config{Store: store, Wait: -time.Second}, "wait -1s must be positive"},
		{"unknown in-progress policy", Config{Store: store, OnInProgress: "block"}, `"reject", "wait"`},
		{"unknown store error policy", Config{Store: store, OnStoreError: "ignore"}, `"fail-closed", "fail-open"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReceiver(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestParsePolicies(t *testing.T) {
	for _, s := range []string{"reject", "wait"} {
		if p, err := ParseInProgressPolicy(s); err != nil || string(p) != s {
			t.Errorf("ParseInProgressPolicy(%q) = %q, %v", s, p, err)
		}
	}
	for _, s := range []string{"fail-closed", "fail-open"} {
		if p, err := ParseStoreErrorPolicy(s); err != nil || string(p) != s {
			t.Errorf("ParseStoreErrorPolicy(%q) = %q, %v", s, p, err)
		}
	}
	if _, err := ParseInProgressPolicy("Reject"); err == nil || !strings.Contains(err.Error(), `allowed values are "reject", "wait"`) {
		t.Errorf("ParseInProgressPolicy(Reject) err = %v, want the allowed values named", err)
	}
	if _, err := ParseStoreErrorPolicy(""); err == nil || !strings.Contains(err.Error(), `allowed values are "fail-closed", "fail-open"`) {
		t.Errorf("ParseStoreErrorPolicy(\"\") err = %v, want the allowed values named", err)
	}
}
