// Package storetest is the one conformance suite that every [stores.Store]
// implementation, with its [stores.Admin] operations, passes against its
// real backend. Each implementation's test
// calls Run with a Harness that makes fresh stores.
package storetest

import (
	"testing"

	"github.com/onceflow/onceflow/stores"
)

// Harness tells the suite how to make the store under test.
type Harness struct {
	// New returns a store for one test, on a key space no other test uses.
	// Register any cleanup with t.Cleanup; the suite does not close it.
	New func(t *testing.T) stores.Store

	// Unavailable returns a store whose backend cannot be reached (a closed
	// port, a closed store), to check that outages surface as
	// [stores.ErrUnavailable].
	Unavailable func(t *testing.T) stores.Store

	// Bounded, for a store with a capacity, returns one for one test that
	// holds at most capacity records. Nil: the capacity cases are skipped.
	Bounded func(t *testing.T, capacity int) stores.Store
}

// Run runs the conformance suite against h.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.Unavailable == nil {
		t.Fatal("storetest: Harness.New and Harness.Unavailable are required")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, h)
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, h Harness)
}

// cases lists the suite, grouped by the file that holds each concern.
var cases = []testCase{
	// claim.go: the three outcomes of Claim.
	{"ClaimAbsentAcquires", testClaimAbsentAcquires},
	{"ClaimHeldIsInProgress", testClaimHeldIsInProgress},
	{"ClaimCompletedReturnsRecord", testClaimCompletedReturnsRecord},
	{"KeysAreIndependent", testKeysAreIndependent},
	// ownership.go: only the token's owner writes.
	{"WrongTokenIsLeaseLost", testWrongTokenIsLeaseLost},
	{"ReleaseFreesKeyAtOnce", testReleaseFreesKeyAtOnce},
	{"CompleteIsFinal", testCompleteIsFinal},
	{"CompleteAgainSucceeds", testCompleteAgainSucceeds},
	// expiry.go: the store's clock ends leases and records.
	{"TakeoverAfterLeaseEnds", testTakeoverAfterLeaseEnds},
	{"ExtendKeepsLease", testExtendKeepsLease},
	{"CompleteAfterLeaseEndsIsLeaseLost", testCompleteAfterLeaseEndsIsLeaseLost},
	{"CompletedRecordExpires", testCompletedRecordExpires},
	// concurrency.go
	{"ConcurrentClaimsOneWinner", testConcurrentClaimsOneWinner},
	// data.go: bytes and keys round-trip.
	{"ResultAndFingerprintRoundTrip", testResultAndFingerprintRoundTrip},
	{"KeyLengths", testKeyLengths},
	{"LongKeysSharingPrefixAreDistinct", testLongKeysSharingPrefixAreDistinct},
	// errors.go: bad input, cancellation, outages.
	{"EmptyKeyIsInvalid", testEmptyKeyIsInvalid},
	{"InvalidArguments", testInvalidArguments},
	{"CancelledContextChangesNothing", testCancelledContextChangesNothing},
	{"BackendDownIsUnavailable", testBackendDownIsUnavailable},
	// capacity.go: a full store refuses, and forgets nothing to make room.
	{"FullRefusesClaim", testFullRefusesClaim},
	{"FullMakesRoomOnlyFromExpired", testFullMakesRoomOnlyFromExpired},
	// admin.go: stores.Admin, reading and removing records.
	{"Admin", testAdmin},
}
