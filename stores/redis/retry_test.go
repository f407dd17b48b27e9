package redisstore_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores/redis/internal/redisscript"
)

// TestScriptsAnswerTheirResend runs each of the store's writing scripts
// twice with the same arguments, as a client resends a call whose reply
// it lost, and checks that the second run answers as the first and
// changes nothing, while a new call with the same token gets the answer
// it always got.
func TestScriptsAnswerTheirResend(t *testing.T) {
	client := testenv.Redis(t)
	ctx := testCtx(t)
	prefix := testenv.KeyPrefix(t)
	eval := func(script, key string, args ...any) any {
		t.Helper()
		reply, err := client.Eval(ctx, script, []string{prefix + key}, args...).Result()
		if err != nil {
			t.Fatalf("script on %s: %v", key, err)
		}
		return reply
	}
	twice := func(what, script, key string, args ...any) any {
		t.Helper()
		first := eval(script, key, args...)
		before := client.Get(ctx, prefix+key).Val()
		time.Sleep(2 * time.Millisecond) // the server's clock moves on
		if again := eval(script, key, args...); !reflect.DeepEqual(again, first) {
			t.Errorf("%s run again = %v, want %v", what, again, first)
		}
		if after := client.Get(ctx, prefix+key).Val(); after != before {
			t.Errorf("%s run again changed the record from %v to %v", what, before, after)
		}
		return first
	}
	const minute = 60_000_000 // µs

	claimed := twice("Claim", redisscript.ClaimOne, "k", "tok-1", "fp", minute)
	if claimed.([]any)[0] != "acquired" {
		t.Fatalf("Claim = %v, want acquired", claimed)
	}
	until := twice("Extend", redisscript.Extend, "k", "tok-1", 2*minute, "extend-1")
	if later := eval(redisscript.Extend, "k", "tok-1", 2*minute, "extend-2"); later.(int64) <= until.(int64) {
		t.Errorf("a second Extend moved the lease end from %v to %v, want later", until, later)
	}
	if done := twice("Complete", redisscript.CompleteOne, "k", "tok-1", "result", minute); done != int64(1) {
		t.Fatalf("Complete = %v, want 1", done)
	}
	if other := eval(redisscript.CompleteOne, "k", "tok-1", "other result", minute); other != int64(0) {
		t.Errorf("Complete with another result = %v, want 0", other)
	}
	if v := client.Get(ctx, prefix+"k").Val(); strings.Contains(v, "extend-") {
		t.Errorf("completed record %q keeps an extend id", v)
	}

	eval(redisscript.ClaimOne, "r", "tok-2", "fp", minute)
	if released := twice("Release", redisscript.Release, "r", "tok-2", "release-1"); released != int64(1) {
		t.Fatalf("Release = %v, want 1", released)
	}
	if again := eval(redisscript.Release, "r", "tok-2", "release-2"); again != int64(0) {
		t.Errorf("a second Release = %v, want 0", again)
	}
	// The key is claimed anew, and completed, before the Release is
	// resent: the new owner's record still knows it.
	eval(redisscript.ClaimOne, "r", "tok-3", "fp", minute)
	if again := eval(redisscript.Release, "r", "tok-2", "release-1"); again != int64(1) {
		t.Errorf("Release resent after the key was claimed anew = %v, want 1", again)
	}
	eval(redisscript.CompleteOne, "r", "tok-3", "result", minute)
	if again := eval(redisscript.Release, "r", "tok-2", "release-1"); again != int64(1) {
		t.Errorf("Release resent after the key was completed anew = %v, want 1", again)
	}
	if v := client.Get(ctx, prefix+"r").Val(); !strings.HasPrefix(v, "1c") {
		t.Errorf("record after the resent Releases = %q, want a completed one", v)
	}

	// What a Release leaves lasts as long as the lease it released.
	eval(redisscript.ClaimOne, "short", "tok-4", "fp", 50_000)
	eval(redisscript.Release, "short", "tok-4", "release-3")
	time.Sleep(60 * time.Millisecond)
	if again := eval(redisscript.Release, "short", "tok-4", "release-3"); again != int64(0) {
		t.Errorf("Release resent after its lease would have ended = %v, want 0", again)
	}
	if n := client.Exists(ctx, prefix+"short").Val(); n != 0 {
		t.Errorf("released key still exists after its lease would have ended")
	}
}
