package receiver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/middleware/internal/receivertest"
	"github.com/onceflow/onceflow/middleware/receiver"
	"github.com/onceflow/onceflow/stores"
)

const (
	testScope = "scope"
	testKey   = "key"
	storeKey  = testScope + ":" + testKey
)

var (
	errHandler  = errors.New("handler failed")
	errDriver   = errors.New("connection refused")
	fingerprint = []byte("fingerprint")
	otherPrint  = []byte("another fingerprint")
)

// completeKey leaves storeKey completed with fp and result.
func completeKey(fp []byte, result string) func(t *testing.T, s stores.Store) {
	return func(t *testing.T, s stores.Store) {
		c, err := s.Claim(context.Background(), storeKey, fp, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(context.Background(), storeKey, c.Token, []byte(result), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
}

// holdKey leaves storeKey in progress under fp, owned by someone else.
func holdKey(fp []byte) func(t *testing.T, s stores.Store) {
	return func(t *testing.T, s stores.Store) {
		if _, err := s.Claim(context.Background(), storeKey, fp, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}

func TestExecuteOutcomes(t *testing.T) {
	cases := []struct {
		name      string
		cfg       receiver.Config
		before    func(t *testing.T, s stores.Store)
		faults    map[string]error
		failTimes int // each fault fails this many calls; 0: every one
		fnErr     error
		want      receiver.Outcome
		wantErr   error // matched with errors.Is; nil means success
		wantRuns  int
		wantValue string
	}{
		{name: "absent key is processed", want: receiver.OutcomeProcessed, wantRuns: 1, wantValue: "value"},
		{name: "completed key is a duplicate", before: completeKey(fingerprint, "stored"),
			want: receiver.OutcomeDuplicate, wantValue: "stored"},
		{name: "completed key with another fingerprint", before: completeKey(otherPrint, "stored"),
			want: receiver.OutcomeFingerprintMismatch, wantErr: receiver.ErrFingerprintMismatch},
		{name: "held key is rejected", before: holdKey(fingerprint),
			want: receiver.OutcomeInProgress, wantErr: receiver.ErrInProgress},
		{name: "held key with another fingerprint", before: holdKey(otherPrint),
			want: receiver.OutcomeFingerprintMismatch, wantErr: receiver.ErrFingerprintMismatch},
		{name: "held key outlasts wait", cfg: receiver.Config{OnInProgress: receiver.Wait, Wait: 30 * time.Millisecond},
			before: holdKey(fingerprint), want: receiver.OutcomeInProgress, wantErr: receiver.ErrInProgress},
		{name: "held key with another fingerprint under wait", cfg: receiver.Config{OnInProgress: receiver.Wait},
			before: holdKey(otherPrint), want: receiver.OutcomeFingerprintMismatch, wantErr: receiver.ErrFingerprintMismatch},
		{name: "handler error is returned", fnErr: errHandler,
			want: receiver.OutcomeFailed, wantErr: errHandler, wantRuns: 1},
		{name: "store down fails closed", faults: map[string]error{"claim": stores.Unavailable("claim", errDriver)},
			want: receiver.OutcomeStoreError, wantErr: stores.ErrUnavailable},
		{name: "store closed fails closed", before: func(t *testing.T, s stores.Store) { _ = s.(io.Closer).Close() },
			want: receiver.OutcomeStoreError, wantErr: stores.ErrClosed},
		{name: "store down fails open", cfg: receiver.Config{OnStoreError: receiver.FailOpen},
			faults: map[string]error{"claim": stores.Unavailable("claim", errDriver)},
			want:   receiver.OutcomeFailOpen, wantRuns: 1, wantValue: "value"},
		{name: "store down fails open into handler error", cfg: receiver.Config{OnStoreError: receiver.FailOpen}, fnErr: errHandler,
			faults: map[string]error{"claim": stores.Unavailable("claim", errDriver)},
			want:   receiver.OutcomeFailOpen, wantErr: errHandler, wantRuns: 1},
		{name: "full store is refused", faults: map[string]error{"claim": fmt.Errorf("%w: 3 records", stores.ErrFull)},
			want: receiver.OutcomeStoreFull, wantErr: stores.ErrFull},
		{name: "full store never fails open", cfg: receiver.Config{OnStoreError: receiver.FailOpen},
			faults: map[string]error{"claim": fmt.Errorf("%w: 3 records", stores.ErrFull)},
			want:   receiver.OutcomeStoreFull, wantErr: stores.ErrFull},
		{name: "other store errors never fail open", cfg: receiver.Config{OnStoreError: receiver.FailOpen},
			faults: map[string]error{"claim": stores.ErrInvalidArgument},
			want:   receiver.OutcomeStoreError, wantErr: stores.ErrInvalidArgument},
		{name: "lease lost at completion still returns the result",
			faults: map[string]error{"complete": stores.ErrLeaseLost},
			want:   receiver.OutcomeLeaseLost, wantRuns: 1, wantValue: "value"},
		{name: "store down at completion still returns the result",
			faults: map[string]error{"complete": stores.Unavailable("complete", errDriver)},
			want:   receiver.OutcomeStoreError, wantRuns: 1, wantValue: "value"},
		{name: "store down briefly at completion is asked again",
			faults:    map[string]error{"complete": stores.Unavailable("complete", errDriver)},
			failTimes: 3, want: receiver.OutcomeProcessed, wantRuns: 1, wantValue: "value"},
		{name: "lease lost at release", fnErr: errHandler, faults: map[string]error{"release": stores.ErrLeaseLost},
			want: receiver.OutcomeLeaseLost, wantErr: errHandler, wantRuns: 1},
		{name: "store down at release", fnErr: errHandler,
			faults: map[string]error{"release": stores.Unavailable("release", errDriver)},
			want:   receiver.OutcomeFailed, wantErr: errHandler, wantRuns: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := receivertest.NewFaultyStore(t)
			if tc.before != nil {
				tc.before(t, store.Store)
			}
			for op, err := range tc.faults {
				if tc.failTimes > 0 {
					store.FailTimes(op, err, tc.failTimes)
				} else {
					store.Fail(op, err)
				}
			}
			cfg := tc.cfg
			cfg.Store = store
			r, rec := receivertest.NewReceiver(t, cfg)

			runs := 0
			res, err := r.Execute(context.Background(), testScope, testKey, fingerprint,
				func(context.Context) ([]byte, error) {
					runs++
					if tc.fnErr != nil {
						return nil, tc.fnErr
					}
					return []byte("value"), nil
				})

			if tc.wantErr == nil && err != nil {
				t.Fatalf("Execute: unexpected error %v", err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Execute error = %v, want one matching %v", err, tc.wantErr)
			}
			if res.Outcome != tc.want {
				t.Errorf("outcome = %q, want %q", res.Outcome, tc.want)
			}
			if string(res.Value) != tc.wantValue {
				t.Errorf("value = %q, want %q", res.Value, tc.wantValue)
			}
			if runs != tc.wantRuns {
				t.Errorf("fn ran %d times, want %d", runs, tc.wantRuns)
			}
			if rec.Count(tc.want) != 1 || rec.Total() != 1 {
				t.Errorf("observer saw %v, want exactly one %q", rec.Outcomes(), tc.want)
			}
		})
	}
}

func TestExecuteFingerprintMismatchNamesKeyAndReason(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	ok := func(context.Context) ([]byte, error) { return nil, nil }
	if _, err := r.Execute(context.Background(), testScope, testKey, fingerprint, ok); err != nil {
		t.Fatal(err)
	}
	_, err := r.Execute(context.Background(), testScope, testKey, otherPrint, ok)
	if !errors.Is(err, receiver.ErrFingerprintMismatch) {
		t.Fatalf("err = %v, want ErrFingerprintMismatch (which package consume holds permanent)", err)
	}
	for _, want := range []string{"fingerprint_mismatch", storeKey} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestExecuteRunsOncePerScopeAndKey(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	var runs atomic.Int32
	fn := func(context.Context) ([]byte, error) {
		runs.Add(1)
		return []byte("value"), nil
	}
	for _, scope := range []string{"a", "b", "a", "b", "a"} {
		if _, err := r.Execute(context.Background(), scope, testKey, fingerprint, fn); err != nil {
			t.Fatal(err)
		}
	}
	if runs.Load() != 2 || rec.Count(receiver.OutcomeProcessed) != 2 || rec.Count(receiver.OutcomeDuplicate) != 3 {
		t.Fatalf("runs = %d, outcomes = %v; want 2 runs (one per scope) and 3 duplicates", runs.Load(), rec.Outcomes())
	}
}

func TestExecutePassesTokenAndTimesStoreCalls(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	var token stores.Token
	_, err := r.Execute(context.Background(), testScope, testKey, fingerprint, func(ctx context.Context) ([]byte, error) {
		var ok bool
		if token, ok = receiver.TokenFromContext(ctx); !ok {
			t.Error("no token in fn's context")
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if token == "" {
		t.Fatal("empty token")
	}
	if rec.OpCount("claim") != 1 || rec.OpCount("complete") != 1 {
		t.Fatalf("store latencies observed = %v, want one claim and one complete", rec.Ops())
	}
	if _, ok := receiver.TokenFromContext(context.Background()); ok {
		t.Fatal("token found outside fn")
	}
}

func TestExecuteFailOpenRunsWithoutToken(t *testing.T) {
	store := receivertest.NewFaultyStore(t)
	store.Fail("claim", stores.Unavailable("claim", errDriver))
	r, _ := receivertest.NewReceiver(t, receiver.Config{Store: store, OnStoreError: receiver.FailOpen})
	_, err := r.Execute(context.Background(), testScope, testKey, fingerprint, func(ctx context.Context) ([]byte, error) {
		if _, ok := receiver.TokenFromContext(ctx); ok {
			t.Error("token present although no record was claimed")
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestExecuteRejectsEmptyScopeOrKey(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	for _, sk := range [][2]string{{"", testKey}, {testScope, ""}} {
		_, err := r.Execute(context.Background(), sk[0], sk[1], fingerprint, func(context.Context) ([]byte, error) {
			t.Error("fn ran without a key")
			return nil, nil
		})
		if !errors.Is(err, receiver.ErrNoKey) {
			t.Errorf("Execute(%q, %q) error = %v, want ErrNoKey (which package consume holds permanent)", sk[0], sk[1], err)
		}
	}
	if rec.Total() != 0 {
		t.Fatalf("outcomes %v for invalid input, want none", rec.Outcomes())
	}
}

func TestExecuteCancelledContextIsNotAStoreError(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{OnStoreError: receiver.FailOpen})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Execute(ctx, testScope, testKey, fingerprint, func(context.Context) ([]byte, error) {
		t.Error("fn ran on a cancelled context")
		return nil, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if rec.Total() != 0 {
		t.Fatalf("outcomes %v, want none for a cancelled context", rec.Outcomes())
	}
}

// Keys longer than any store column are hashed by the store, never
// truncated: two long keys with a common prefix stay distinct.
func TestExecuteLongKeysAreNotTruncated(t *testing.T) {
	r, rec := receivertest.NewReceiver(t, receiver.Config{})
	prefix := strings.Repeat("k", 4*stores.MaxKeyBytes)
	for _, key := range []string{prefix + "1", prefix + "2", prefix + "1"} {
		if _, err := r.Execute(context.Background(), testScope, key, fingerprint,
			func(context.Context) ([]byte, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if rec.Count(receiver.OutcomeProcessed) != 2 || rec.Count(receiver.OutcomeDuplicate) != 1 {
		t.Fatalf("outcomes = %v, want 2 processed and 1 duplicate", rec.Outcomes())
	}
}

func TestExecuteResultRoundTrips(t *testing.T) {
	r, _ := receivertest.NewReceiver(t, receiver.Config{})
	value := bytes.Repeat([]byte{0, 0xff, 'x'}, 1000)
	fn := func(context.Context) ([]byte, error) { return value, nil }
	first, err := r.Execute(context.Background(), testScope, testKey, fingerprint, fn)
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Execute(context.Background(), testScope, testKey, fingerprint, fn)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Value, value) || !bytes.Equal(second.Value, value) || second.Outcome != receiver.OutcomeDuplicate {
		t.Fatalf("results differ: first %q (%d bytes), second %q (%d bytes)",
			first.Outcome, len(first.Value), second.Outcome, len(second.Value))
	}
}
