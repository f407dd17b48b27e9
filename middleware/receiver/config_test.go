package receiver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
)

func TestNewReceiverDefaults(t *testing.T) {
	r, err := receiver.New(receiver.Config{Store: receivertest.NewMemory(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Config()
	if r.Lease() != receiver.DefaultLease || c.TTL != receiver.DefaultTTL || c.Wait != receiver.DefaultWait ||
		c.OnInProgress != receiver.Reject || c.OnStoreError != receiver.FailClosed || c.Observer == nil || c.Logger == nil {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

func TestNewReceiverValidates(t *testing.T) {
	store := receivertest.NewMemory(t)
	cases := []struct {
		name string
		cfg  receiver.Config
		want string
	}{
		{"no store", receiver.Config{}, "missing store"},
		{"negative lease", receiver.Config{Store: store, Lease: -time.Second}, "lease -1s must be at least 1ms"},
		{"lease too short to heartbeat", receiver.Config{Store: store, Lease: time.Microsecond}, "lease 1µs must be at least 1ms"},
		{"negative ttl", receiver.Config{Store: store, TTL: -time.Second}, "ttl -1s must be positive"},
		{"negative wait", receiver.Config{Store: store, Wait: -time.Second}, "wait -1s must be positive"},
		{"unknown in-progress policy", receiver.Config{Store: store, OnInProgress: "block"}, `"reject", "wait"`},
		{"unknown store error policy", receiver.Config{Store: store, OnStoreError: "ignore"}, `"fail-closed", "fail-open"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := receiver.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestParsePolicies(t *testing.T) {
	for _, s := range []string{"reject", "wait"} {
		if p, err := receiver.ParseInProgressPolicy(s); err != nil || string(p) != s {
			t.Errorf("ParseInProgressPolicy(%q) = %q, %v", s, p, err)
		}
	}
	for _, s := range []string{"fail-closed", "fail-open"} {
		if p, err := receiver.ParseStoreErrorPolicy(s); err != nil || string(p) != s {
			t.Errorf("ParseStoreErrorPolicy(%q) = %q, %v", s, p, err)
		}
	}
	if _, err := receiver.ParseInProgressPolicy("Reject"); err == nil || !strings.Contains(err.Error(), `allowed values are "reject", "wait"`) {
		t.Errorf("ParseInProgressPolicy(Reject) err = %v, want the allowed values named", err)
	}
	if _, err := receiver.ParseStoreErrorPolicy(""); err == nil || !strings.Contains(err.Error(), `allowed values are "fail-closed", "fail-open"`) {
		t.Errorf("ParseStoreErrorPolicy(\"\") err = %v, want the allowed values named", err)
	}
}
