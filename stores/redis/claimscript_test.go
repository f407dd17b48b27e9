package redisstore_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
)

// The batch claim script (ClaimBatchScript), run on its own as a tool such
// as redis-benchmark runs it, claims for the store: the keys it claims are
// held when the store is asked for them, each with its own fingerprint; the
// same run again (a client resending it) answers as the first, and a run
// with other tokens finds them held.
func TestClaimBatchScriptClaimsForTheStore(t *testing.T) {
	client := testenv.Redis(t)
	prefix := testenv.KeyPrefix(t)
	s := testenv.RedisStore(t, client, redisstore.Config{KeyPrefix: prefix})
	run := func(tokA, tokB string) []any {
		t.Helper()
		reply, err := client.Eval(t.Context(), redisstore.ClaimBatchScript(), []string{prefix + "a", prefix + "b"},
			tokA, "fp-a", 30_000_000, tokB, "fp-b", 30_000_000).Slice()
		if err != nil {
			t.Fatal(err)
		}
		if len(reply) != 2 {
			t.Fatalf("reply %v, want one per key", reply)
		}
		return reply
	}
	first := run("tok-a", "tok-b")
	for i, r := range first {
		if r.([]any)[0] != "acquired" {
			t.Fatalf("first run, key %d = %v, want acquired", i, r)
		}
	}
	if again := run("tok-a", "tok-b"); !reflect.DeepEqual(again, first) {
		t.Errorf("the first run again = %v, want %v", again, first)
	}
	for i, r := range run("tok-c", "tok-d") {
		if r.([]any)[0] != "in_progress" {
			t.Errorf("run with other tokens, key %d = %v, want in_progress", i, r)
		}
	}
	c, err := s.Claim(t.Context(), "b", []byte("fp"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != stores.InProgress || string(c.Record.Fingerprint) != "fp-b" {
		t.Errorf("Claim after the script = %v with fingerprint %q, want in progress with %q", c.Status, c.Record.Fingerprint, "fp-b")
	}
}
