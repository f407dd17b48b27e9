// Package linearizable checks that a [stores.Store] is linearizable: that
// every history of concurrent calls recorded against it can be explained by
// the calls taking effect one at a time, each at some instant between its
// invocation and its return, on a single record per key that follows the
// contract of package stores. It is the conformance suite's
// (stores/storetest) stress-test half: storetest checks each rule on its
// own, one call after another; this package lets many clients race on a
// few keys, with short leases and faults of the backend, and asks
// porcupine (github.com/anishathalye/porcupine) whether any sequential
// order fits what they saw. Its tests run it against every store of the
// root module (memory, Redis, PostgreSQL, the cache), with the faults of
// internal/testenv; it lives in the tools module so that porcupine stays
// out of the go.mod a library user's build reads.
//
// Run drives a store with Config.Clients concurrent clients (8) on
// Config.Keys keys (3) for Config.Duration, each calling Claim, Complete,
// Release, Extend and, when the store implements [stores.Admin], Lookup in
// a random mix: owners that complete, release, extend or oversleep their
// lease, and former owners whose stale tokens must be fenced off. Every
// call is recorded with its invocation and return times; then the history
// is checked against the model below, one key at a time. On a violation
// the test logs, per key, the longest order of calls that fits and the
// calls it could not place, and fails with the path of porcupine's HTML
// visualisation, written under os.TempDir()/onceflow-linearizability (see
// Config.OutDir) so that it outlives the test's temporary directory.
//
// # The model
//
// The state of a key is absent, in progress (owner's token, fingerprint,
// lease end) or completed (owner's token, fingerprint, result, expiry).
// Each Claim carries a fingerprint, and each Complete a result, that no
// other call uses, so what a call observes names the call that wrote it.
//
//   - Claim returns Acquired only if the record could have ended (absent,
//     or its lease end or expiry reached) at some instant of the call; the
//     key is then in progress for the returned token, whatever it is
//     (tokens are opaque; each acquisition's must differ from every other
//     one's), until the returned lease end, which must lie within the
//     lease after some instant of the call. It returns InProgress or
//     Completed only if that record, with its fingerprint, lease end or
//     result and expiry, could still be live at an instant of the call.
//   - Complete, Release and Extend succeed only for the current owner's
//     token while its lease could still be live; Complete makes the record
//     completed until ttl after the instant it took effect, Release makes
//     the key absent, Extend moves the lease end to what it returns. A
//     token that is not the owner's gets ErrLeaseLost and changes nothing;
//     the owner's gets it only if its lease could have ended. Complete
//     also succeeds, changing nothing, for the token and result that
//     completed the record while it could still be live (the clients never
//     call so: each Complete's result is its own).
//   - Lookup returns the live record, its token included, or ErrNotFound
//     only if the record could have ended.
//
// Not checked here, but by the conformance suite one call at a time:
// Admin.Remove, the records' CreatedAt and CompletedAt, and capacity
// (ErrFull).
//
// Expiry is judged by the store's clock, as the contract says. A call's
// effect is placed at one instant of its [invocation, return] window, and
// the instants of successive effects never decrease: the model carries the
// earliest instant the last effect can have had, and a call that needs a
// lease to have ended moves it to that lease end. So a takeover is
// accepted when the former owner's lease could have ended by the time the
// takeover returned, the former owner's later Complete must then fail,
// and a takeover whose whole window lies before the lease end is a
// violation. Store timestamps and the clients' clock are compared with
// Config.Tolerance (5ms) of slack. The lease end a Claim reports is a
// lower bound: the lease may be held until the lease from the Claim's
// return (Redis's native claim reports the end from the client's clock as
// it sends the command, and the server's lease starts when it runs it),
// and every later report of that lease must repeat the end reported.
// A completed record's expiry is known
// only to within its Complete's window (the store's clock at an instant of
// the call, plus ttl); observations must fall within it.
//
// A record seen ended is not forgotten at once: a later call may still
// find it live, but only within the tolerance of its end. A store whose
// calls read its clock before they take effect (PostgreSQL's now() is the
// transaction's start; the effect comes at commit) is checked with
// Config.ClockBeforeEffect: a call is then judged live by the clock at its
// invocation, so an owner's Complete judged live may take effect after a
// Lookup found its lease ended, but a call invoked after the end is still
// refused, and a former owner's call after a takeover still fails.
//
// # Unknown outcomes
//
// A call that fails with a store outage or a context error may or may not
// have taken effect. It is recorded with a return time of infinity
// (math.MaxInt64), so porcupine may place its effect at any instant after
// its invocation, or after every other call, which is the same as never;
// the model accepts it in any state. A Claim of unknown outcome may thus
// have acquired the key for a token nobody saw, until a lease end nobody
// saw (the key reads in progress until a later call shows its lease end,
// or until the lease could have ended). Calls that provably never reached
// the backend (Config.NotSent, such as a refused connection on a client
// that does not retry) had no effect and are left out of the history.
//
// # Scale
//
// The default run (1s per store) fits `make test`. With LINEARIZABILITY=long
// in the environment (`make linearizability`) Run records for 20s per
// store and faults repeat; see Long. A run that has not met by then what
// it must cover goes on until it has, bounded by calls, not by time (see
// Config.CoverCalls): on a busy machine it records longer, never checks
// less.
package linearizable
