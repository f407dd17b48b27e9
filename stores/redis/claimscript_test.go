package redisstore_test

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// The exported claim script is the store's: a key it claims is held when
// the store is asked for it, and a second run finds it held.
func TestClaimScriptClaimsForTheStore(t *testing.T) {
	client := testenv.Redis(t)
	prefix := testenv.KeyPrefix(t)
	s := redisstore.New(client, redisstore.Config{KeyPrefix: prefix})
	run := func() []any {
		t.Helper()
		reply, err := client.Eval(t.Context(), redisstore.ClaimScript(), []string{prefix + "k"}, "tok", "fp", 30_000_000).Slice()
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	if got := run(); got[0] != "acquired" {
		t.Fatalf("first run = %v, want acquired", got)
	}
	if got := run(); got[0] != "in_progress" {
		t.Errorf("second run = %v, want in_progress", got)
	}
	c, err := s.Claim(t.Context(), "k", []byte("fp"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != stores.InProgress || string(c.Record.Fingerprint) != "fp" {
		t.Errorf("Claim after the script = %v with fingerprint %q, want in progress with %q", c.Status, c.Record.Fingerprint, "fp")
	}
}
