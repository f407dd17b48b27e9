package redisstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/stores"
	redisstore "github.com/onceflow/onceflow/stores/redis"
	"github.com/onceflow/onceflow/stores/redis/internal/redisscript"
)

// TestReadsRecordsOfTheHashLayout writes records as a service of the
// earlier layout did (a hash per record, by its own scripts) and checks
// that a Store reads each as that service would have until it expires:
// a completed record answers with its result, an owner of the earlier
// version can still complete, release and extend its claim, a Release
// it remembers is still recognised, and an ended record is taken over.
// Every record a Store writes over one is in the packed layout.
func TestReadsRecordsOfTheHashLayout(t *testing.T) {
	t.Parallel()
	c := testenv.Redis(t)
	ctx := testCtx(t)
	prefix := testenv.KeyPrefix(t)
	for _, unbatched := range []bool{false, true} {
		prefix := fmt.Sprintf("%sunbatched=%v:", prefix, unbatched)
		s := testenv.RedisStore(t, c, redisstore.Config{KeyPrefix: prefix, Unbatched: unbatched})
		old := func(script, key string, args ...any) any {
			t.Helper()
			reply, err := c.Eval(ctx, script, []string{prefix + key}, args...).Result()
			if err != nil {
				t.Fatalf("the earlier script on %s: %v", key, err)
			}
			return reply
		}
		wantPacked := func(key, state string) {
			t.Helper()
			if v, err := c.Get(ctx, prefix+key).Result(); err != nil || !strings.HasPrefix(v, "1"+state) {
				t.Errorf("%s after the Store wrote it = %q, %v; want a packed record in state %s", key, v, err, state)
			}
		}
		const minute = 60_000_000 // µs

		t.Run(fmt.Sprintf("unbatched=%v/completed", unbatched), func(t *testing.T) {
			old(hashClaim, "done", "tok-old", "fp-old", minute)
			old(hashComplete, "done", "tok-old", "result-old", minute)
			cl, err := s.Claim(ctx, "done", []byte("fp-new"), time.Minute)
			if err != nil || cl.Status != stores.Completed || string(cl.Record.Result) != "result-old" || string(cl.Record.Fingerprint) != "fp-old" {
				t.Fatalf("Claim of a completed hash = %v %q %q, %v; want completed with its result", cl.Status, cl.Record.Fingerprint, cl.Record.Result, err)
			}
			if e, err := s.Lookup(ctx, "done"); err != nil || e.Status != stores.Completed || e.Token != "tok-old" {
				t.Errorf("Lookup of a completed hash = %+v, %v", e, err)
			}
			if err := s.Complete(ctx, "done", "tok-old", []byte("result-old"), time.Minute); err != nil {
				t.Errorf("the earlier owner's Complete sent again: %v, want nil", err)
			}
		})

		t.Run(fmt.Sprintf("unbatched=%v/in progress", unbatched), func(t *testing.T) {
			old(hashClaim, "held", "tok-old", "fp-old", minute)
			cl, err := s.Claim(ctx, "held", []byte("fp-new"), time.Minute)
			if err != nil || cl.Status != stores.InProgress || string(cl.Record.Fingerprint) != "fp-old" {
				t.Fatalf("Claim of a held hash = %v %q, %v; want in progress with its fingerprint", cl.Status, cl.Record.Fingerprint, err)
			}
			if _, err := s.Extend(ctx, "held", "tok-old", time.Minute); err != nil {
				t.Fatalf("the earlier owner's Extend: %v", err)
			}
			wantPacked("held", "p")
			if err := s.Complete(ctx, "held", "tok-old", []byte("r"), time.Minute); err != nil {
				t.Fatalf("the earlier owner's Complete: %v", err)
			}
			wantPacked("held", "c")
			if cl, err := s.Claim(ctx, "held", nil, time.Minute); err != nil || cl.Status != stores.Completed || string(cl.Record.Result) != "r" {
				t.Errorf("Claim after the Complete = %v %q, %v", cl.Status, cl.Record.Result, err)
			}
		})

		t.Run(fmt.Sprintf("unbatched=%v/released", unbatched), func(t *testing.T) {
			old(hashClaim, "rel", "tok-old", "fp-old", minute)
			if err := s.Release(ctx, "rel", "tok-old"); err != nil {
				t.Fatalf("the earlier owner's Release: %v", err)
			}
			wantPacked("rel", "r")
			old(hashClaim, "rel2", "tok-old", "fp-old", minute)
			old(hashRelease, "rel2", "tok-old", "release-old")
			cl, err := s.Claim(ctx, "rel2", []byte("fp-new"), time.Minute)
			if err != nil || cl.Status != stores.Acquired {
				t.Fatalf("Claim of a released hash = %v, %v; want acquired", cl.Status, err)
			}
			// The earlier version's Release, resent, is still recognised.
			if again, err := c.Eval(ctx, redisscript.Release, []string{prefix + "rel2"}, "tok-old", "release-old").Result(); err != nil || again != int64(1) {
				t.Errorf("the earlier Release resent = %v, %v; want 1", again, err)
			}
			if err := s.Complete(ctx, "rel2", cl.Token, []byte("r"), time.Minute); err != nil {
				t.Errorf("Complete of the new claim: %v", err)
			}
		})

		t.Run(fmt.Sprintf("unbatched=%v/ended", unbatched), func(t *testing.T) {
			old(hashClaim, "ended", "tok-old", "fp-old", 20_000)
			// The earlier scripts set the key's expiry with the lease: a
			// record whose lease ended is absent, or judged by its times
			// until Redis evicts it. Both take the second path here: the
			// expiry is removed.
			if err := c.Persist(ctx, prefix+"ended").Err(); err != nil {
				t.Fatal(err)
			}
			testenv.WaitFor(t, time.Second, "the earlier lease to end", func() bool {
				cl, err := s.Claim(ctx, "ended", []byte("fp-new"), time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				return cl.Status == stores.Acquired
			})
			wantPacked("ended", "p")
			if err := s.Complete(ctx, "ended", "tok-old", []byte("r"), time.Minute); !errors.Is(err, stores.ErrLeaseLost) {
				t.Errorf("the former owner's Complete after the takeover: %v, want ErrLeaseLost", err)
			}
		})
	}
}
