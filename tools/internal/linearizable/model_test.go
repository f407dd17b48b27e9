package linearizable

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/onceflow/onceflow/stores"
)

// Hand-made histories on one key, times in milliseconds, with the default
// 5ms of tolerance: what the model must accept and what it must refuse.

const msec = int64(time.Millisecond)

// call is one recorded call; ret < 0 is an unknown outcome.
func call(client int, in input, call, ret int64, out output) porcupine.Operation {
	in.key, in.call = "k", call*msec
	out.ret = ret * msec
	if ret < 0 {
		out = output{outcome: unknown, ret: never, err: "store unavailable"}
	}
	return porcupine.Operation{ClientId: client, Input: in, Call: in.call, Output: out, Return: out.ret}
}

func claimIn(fp string, lease int64) input {
	return input{kind: claimCall, fingerprint: fp, lease: lease * msec}
}

func completeIn(token stores.Token, result string, ttl int64) input {
	return input{kind: completeCall, token: token, result: result, ttl: ttl * msec}
}

func acquired(token stores.Token, until int64) output {
	return output{outcome: succeeded, status: stores.Acquired, token: token, leaseUntil: until * msec}
}

func inProgress(fp string, until int64) output {
	return output{outcome: succeeded, status: stores.InProgress, fingerprint: fp, leaseUntil: until * msec}
}

func completed(fp, result string, expires int64) output {
	return output{outcome: succeeded, status: stores.Completed, fingerprint: fp, result: result, expiresAt: expires * msec}
}

var (
	accepted = output{outcome: succeeded}
	refused  = output{outcome: leaseLost}
)

func TestModel(t *testing.T) {
	// A owns the key from [0,1] with a 50ms lease: until 50.
	ownerA := call(0, claimIn("fpA", 50), 0, 1, acquired("A", 50))
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"takeover after the lease ended, former owner fenced off", []porcupine.Operation{
			ownerA,
			call(1, claimIn("fpB", 50), 60, 61, acquired("B", 110)),
			call(0, completeIn("A", "rA", 30), 70, 71, refused),
			call(1, completeIn("B", "rB", 30), 80, 81, accepted),
			call(2, claimIn("fpC", 50), 90, 91, completed("fpB", "rB", 110)),
		}, porcupine.Ok},
		{"takeover before the lease could end", []porcupine.Operation{
			ownerA, call(1, claimIn("fpB", 50), 20, 21, acquired("B", 70)),
		}, porcupine.Illegal},
		{"takeover whose call spans the lease end", []porcupine.Operation{
			ownerA, call(1, claimIn("fpB", 50), 40, 55, acquired("B", 100)),
		}, porcupine.Ok},
		{"takeover within the clock tolerance", []porcupine.Operation{
			ownerA, call(1, claimIn("fpB", 50), 46, 47, acquired("B", 96)),
		}, porcupine.Ok},
		{"takeover just beyond the clock tolerance", []porcupine.Operation{
			ownerA, call(1, claimIn("fpB", 50), 42, 44, acquired("B", 93)),
		}, porcupine.Illegal},
		{"former owner completes after a takeover", []porcupine.Operation{
			ownerA,
			call(1, claimIn("fpB", 50), 60, 61, acquired("B", 110)),
			call(0, completeIn("A", "rA", 30), 70, 71, accepted),
		}, porcupine.Illegal},
		{"owner completes after its lease ended", []porcupine.Operation{
			ownerA, call(0, completeIn("A", "rA", 30), 60, 61, accepted),
		}, porcupine.Illegal},
		{"owner's late Complete refused, then the key is free", []porcupine.Operation{
			ownerA,
			call(0, completeIn("A", "rA", 30), 60, 61, refused),
			call(1, claimIn("fpB", 50), 62, 63, acquired("B", 112)),
		}, porcupine.Ok},
		{"owner refused while its lease is live", []porcupine.Operation{
			ownerA, call(0, completeIn("A", "rA", 30), 10, 11, refused),
		}, porcupine.Illegal},
		{"a stranger's token changes nothing", []porcupine.Operation{
			ownerA,
			call(1, completeIn("X", "rX", 30), 5, 6, refused),
			call(1, input{kind: releaseCall, token: "X"}, 7, 8, refused),
			call(0, completeIn("A", "rA", 30), 10, 11, accepted),
		}, porcupine.Ok},
		{"a stranger's token accepted", []porcupine.Operation{
			ownerA, call(1, input{kind: releaseCall, token: "X"}, 7, 8, accepted),
		}, porcupine.Illegal},
		{"one winner among concurrent claims", []porcupine.Operation{
			ownerA, call(1, claimIn("fpB", 50), 0, 1, acquired("B", 50)),
		}, porcupine.Illegal},
		// A claims over [0,20] and reports the end from its clock at 0:
		// the store's lease may run to 70.
		{"lease held past the end reported, within the claim's window", []porcupine.Operation{
			call(0, claimIn("fpA", 50), 0, 20, acquired("A", 50)),
			call(1, claimIn("fpB", 50), 65, 66, inProgress("fpA", 50)),
		}, porcupine.Ok},
		{"lease held past the claim's window", []porcupine.Operation{
			call(0, claimIn("fpA", 50), 0, 20, acquired("A", 50)),
			call(1, claimIn("fpB", 50), 80, 81, inProgress("fpA", 50)),
		}, porcupine.Illegal},
		{"in progress under another end than the owner was told", []porcupine.Operation{
			call(0, claimIn("fpA", 50), 0, 20, acquired("A", 50)),
			call(1, claimIn("fpB", 50), 30, 31, inProgress("fpA", 65)),
		}, porcupine.Illegal},
		{"in progress under a fingerprint nobody claimed", []porcupine.Operation{
			ownerA, call(1, claimIn("fpB", 50), 10, 11, inProgress("fpZ", 50)),
		}, porcupine.Illegal},
		{"completed record served until it expires, then free", []porcupine.Operation{
			ownerA,
			call(0, completeIn("A", "rA", 20), 10, 11, accepted),
			call(1, claimIn("fpB", 50), 25, 26, completed("fpA", "rA", 30)),
			call(1, claimIn("fpC", 50), 40, 41, acquired("C", 90)),
		}, porcupine.Ok},
		{"completed record served past its expiry", []porcupine.Operation{
			ownerA,
			call(0, completeIn("A", "rA", 20), 10, 11, accepted),
			call(1, claimIn("fpB", 50), 50, 51, completed("fpA", "rA", 31)),
		}, porcupine.Illegal},
		{"completed record forgotten before its expiry", []porcupine.Operation{
			ownerA,
			call(0, completeIn("A", "rA", 40), 10, 11, accepted),
			call(1, claimIn("fpB", 50), 20, 21, acquired("B", 70)),
		}, porcupine.Illegal},
		{"Complete again with the same result, and with another", []porcupine.Operation{
			ownerA,
			call(0, completeIn("A", "rA", 40), 10, 11, accepted),
			call(0, completeIn("A", "rA", 40), 20, 21, accepted),
			call(0, completeIn("A", "rZ", 40), 22, 23, refused),
			call(1, claimIn("fpB", 50), 30, 31, completed("fpA", "rA", 50)),
		}, porcupine.Ok},
		{"Complete again after the record expired", []porcupine.Operation{
			ownerA,
			call(0, completeIn("A", "rA", 20), 10, 11, accepted),
			call(0, completeIn("A", "rA", 20), 50, 51, accepted),
		}, porcupine.Illegal},
		{"result that nobody stored", []porcupine.Operation{
			ownerA,
			call(0, completeIn("A", "rA", 40), 10, 11, accepted),
			call(1, claimIn("fpB", 50), 20, 21, completed("fpA", "rZ", 50)),
		}, porcupine.Illegal},
		{"unknown Claim that took effect", []porcupine.Operation{
			call(0, claimIn("fpA", 50), 0, -1, output{}),
			call(1, claimIn("fpB", 50), 10, 11, inProgress("fpA", 50)),
			call(1, claimIn("fpC", 50), 20, 21, inProgress("fpA", 50)),
		}, porcupine.Ok},
		{"unknown Claim that did not", []porcupine.Operation{
			call(0, claimIn("fpA", 50), 0, -1, output{}),
			call(1, claimIn("fpB", 50), 10, 11, acquired("B", 60)),
			call(2, claimIn("fpC", 50), 20, 21, inProgress("fpB", 60)),
		}, porcupine.Ok},
		{"unknown Claim seen with two lease ends", []porcupine.Operation{
			call(0, claimIn("fpA", 50), 0, -1, output{}),
			call(1, claimIn("fpB", 50), 10, 11, inProgress("fpA", 50)),
			call(1, claimIn("fpC", 50), 20, 21, inProgress("fpA", 90)),
		}, porcupine.Illegal},
		{"unknown Complete, taken effect or not", []porcupine.Operation{
			ownerA,
			call(0, completeIn("A", "rA", 40), 10, -1, output{}),
			call(1, claimIn("fpB", 50), 20, 21, inProgress("fpA", 50)),
			call(1, claimIn("fpC", 50), 30, 31, completed("fpA", "rA", 50)),
		}, porcupine.Ok},
		{"Extend keeps the key past the first lease end", []porcupine.Operation{
			ownerA,
			call(0, input{kind: extendCall, token: "A", lease: 100 * msec}, 10, 11, output{outcome: succeeded, leaseUntil: 110 * msec}),
			call(1, claimIn("fpB", 50), 70, 71, inProgress("fpA", 110)),
			call(0, completeIn("A", "rA", 40), 80, 81, accepted),
		}, porcupine.Ok},
		{"Extend of an ended lease", []porcupine.Operation{
			ownerA,
			call(0, input{kind: extendCall, token: "A", lease: 100 * msec}, 60, 61, output{outcome: succeeded, leaseUntil: 160 * msec}),
		}, porcupine.Illegal},
		{"Lookup reads the owner's token", []porcupine.Operation{
			ownerA,
			call(1, input{kind: lookupCall}, 10, 11, output{outcome: succeeded, status: stores.InProgress, token: "A", fingerprint: "fpA", leaseUntil: 50 * msec}),
			call(1, input{kind: lookupCall}, 60, 61, output{outcome: notFound}),
		}, porcupine.Ok},
		{"Lookup reads an ended lease while its owner's Complete commits", []porcupine.Operation{
			ownerA,
			call(0, completeIn("A", "rA", 30), 49, 52, accepted),
			call(1, input{kind: lookupCall}, 50, 51, output{outcome: notFound}),
		}, porcupine.Ok},
		{"owner completes well after a Lookup read its lease ended", []porcupine.Operation{
			ownerA,
			call(1, input{kind: lookupCall}, 50, 51, output{outcome: notFound}),
			call(0, completeIn("A", "rA", 30), 56, 57, accepted),
		}, porcupine.Illegal},
		{"Lookup reads another token", []porcupine.Operation{
			ownerA,
			call(1, input{kind: lookupCall}, 10, 11, output{outcome: succeeded, status: stores.InProgress, token: "Z", fingerprint: "fpA", leaseUntil: 50 * msec}),
		}, porcupine.Illegal},
		{"Lookup misses a live record", []porcupine.Operation{
			ownerA, call(1, input{kind: lookupCall}, 10, 11, output{outcome: notFound}),
		}, porcupine.Illegal},
		{"token reused by a second acquisition", []porcupine.Operation{
			ownerA, call(1, claimIn("fpB", 50), 60, 61, acquired("A", 110)),
		}, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := check(&history{ops: tc.ops}, Config{}.withDefaults())
			if v.result != tc.want {
				t.Fatalf("check = %v, want %v", v.result, tc.want)
			}
		})
	}
}

// With Config.ClockBeforeEffect a call is judged by the clock at its
// invocation, so a write judged live before a lease end may take effect
// after a Lookup read the lease ended: PostgreSQL's now() is its
// transaction's start. Without, that is a violation.
func TestModelClockBeforeEffect(t *testing.T) {
	ownerA := call(0, claimIn("fpA", 50), 0, 1, acquired("A", 50))
	lateCommit := []porcupine.Operation{
		ownerA,
		call(1, input{kind: lookupCall}, 60, 61, output{outcome: notFound}),
		call(0, completeIn("A", "rA", 30), 40, 70, accepted),
		call(2, claimIn("fpB", 50), 71, 72, completed("fpA", "rA", 72)),
	}
	lateCall := []porcupine.Operation{
		ownerA, call(0, completeIn("A", "rA", 30), 60, 70, accepted),
	}
	takenOver := []porcupine.Operation{
		ownerA,
		call(1, claimIn("fpB", 50), 55, 56, acquired("B", 105)),
		call(0, completeIn("A", "rA", 30), 40, 70, accepted),
	}
	for _, tc := range []struct {
		name              string
		ops               []porcupine.Operation
		clockBeforeEffect bool
		want              porcupine.CheckResult
	}{
		{"commit after a Lookup read the lease ended, clock read at effect", lateCommit, false, porcupine.Illegal},
		{"commit after a Lookup read the lease ended, clock read before", lateCommit, true, porcupine.Ok},
		{"write invoked after the lease ended, clock read before", lateCall, true, porcupine.Illegal},
		{"former owner's write after a takeover, clock read before", takenOver, true, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ClockBeforeEffect: tc.clockBeforeEffect}.withDefaults()
			if v := check(&history{ops: tc.ops}, cfg); v.result != tc.want {
				t.Fatalf("check = %v, want %v", v.result, tc.want)
			}
		})
	}
}
