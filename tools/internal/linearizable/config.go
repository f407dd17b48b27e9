package linearizable

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// LongEnv names the environment variable that selects the long variant:
// LINEARIZABILITY=long (make linearizability).
const LongEnv = "LINEARIZABILITY"

// Long reports whether the long variant was asked for: Run records for 20s
// instead of 1s, checks with a longer timeout, and store tests repeat their
// faults and add slower ones.
func Long() bool { return testenv.Getenv(LongEnv, "") == "long" }

// Config says how Run drives a store. The zero value is the short variant
// (or the long one under Long) with no faults.
type Config struct {
	// Clients is how many clients call the store at once. Default 8.
	Clients int
	// Keys is how many keys they share. Default 3.
	Keys int
	// Duration is how long the clients keep calling. Default 1s, 20s
	// under Long.
	Duration time.Duration
	// MinLease and MaxLease bound the leases of Claim and Extend, drawn
	// uniformly, short enough for leases to end and keys to be taken over
	// during the run. Default 20ms and 80ms. Completes draw their TTL
	// from [MinLease/2, MaxLease/2], so that completed records expire and
	// keys are claimed anew during the run too.
	MinLease, MaxLease time.Duration
	// Outlive, when positive, is the lease of one Claim in ten and the TTL
	// of one Complete in ten instead, so that some records outlive a
	// fault and the check covers what the backend kept through it.
	Outlive time.Duration
	// Think bounds the pause of a client between calls, drawn uniformly.
	// Default 3ms. It paces the clients, so that histories stay small
	// enough to check on fast stores.
	Think time.Duration
	// CallTimeout bounds each call. Default 2s. A call that runs out of
	// it has an unknown outcome.
	CallTimeout time.Duration
	// Tolerance is the slack allowed between the store's clock and the
	// clients' when timestamps are compared. Default 5ms.
	Tolerance time.Duration
	// ClockBeforeEffect says the store may judge a call's leases and
	// expiries by its clock at any instant from the call's invocation on,
	// before the call takes effect: PostgreSQL reads now() when a
	// statement's transaction starts and takes effect at commit, so a
	// Complete or Extend judged live may commit after a Lookup found the
	// same lease ended. The model then asks a lease or record to be live
	// at the call's invocation rather than where its effect is placed.
	// Off (the default), the clock is read where the call takes effect, as
	// in one Lua script (Redis) or under one mutex (memory).
	ClockBeforeEffect bool
	// NoLookup leaves Lookup out of the mix even when the store
	// implements stores.Admin.
	NoLookup bool
	// CoverCalls bounds the calls the clients make past Duration while
	// the run lacks what Run checks it covered (an owner's lease that
	// ended, and Covered): they keep calling until it has it, and while
	// no owner's lease has ended, a client that holds a key outlasts its
	// lease on purpose before its next call with the token. So a run
	// covers what it must whatever the machine's pace, and a run that
	// covered it by Duration is the same as without. Default 1000.
	CoverCalls int
	// Covered, when set, reports whether the run has covered what its
	// test checks beyond Run (such as replies a proxy lost): clients keep
	// calling past Duration until it does, within CoverCalls. Clients call
	// it concurrently.
	Covered func() bool
	// CheckTimeout bounds the linearizability check. Default 30s, 5m under
	// Long. A check that runs out of it fails the test: it found no
	// violation, but did not explore every order either. Hundreds of
	// calls of unknown outcome can make it run out.
	CheckTimeout time.Duration
	// Faults are injected while the clients run.
	Faults []Fault
	// NotSent reports errors of calls that provably never reached the
	// backend: they had no effect and are left out of the history. Nil:
	// every error other than the contract's outcomes is an unknown
	// outcome. DialFailed fits clients that do not retry.
	NotSent func(error) bool
	// OutDir is where the visualisation of a violation is written.
	// Default os.TempDir()/onceflow-linearizability.
	OutDir string
	// Seed seeds the clients' choices; 0 draws one. Run logs it.
	Seed uint64
}

// Fault breaks the backend while the clients run.
type Fault struct {
	// Name says what Inject does, in logs and the visualisation.
	Name string
	// Start is when Inject is first called, after the clients start.
	Start time.Duration
	// Every, when positive, calls Inject again this long after each call
	// began, while the clients run.
	Every time.Duration
	// Inject breaks the backend and repairs it before it returns; its
	// error fails the test.
	Inject func(ctx context.Context) error
}

func (c Config) withDefaults() Config {
	isLong := Long()
	def := func(v *time.Duration, short, long time.Duration) {
		if *v <= 0 {
			*v = short
			if isLong {
				*v = long
			}
		}
	}
	if c.Clients <= 0 {
		c.Clients = 8
	}
	if c.Keys <= 0 {
		c.Keys = 3
	}
	if c.CoverCalls <= 0 {
		c.CoverCalls = 1000
	}
	def(&c.Duration, time.Second, 20*time.Second)
	def(&c.MinLease, 20*time.Millisecond, 20*time.Millisecond)
	def(&c.MaxLease, 80*time.Millisecond, 80*time.Millisecond)
	c.MaxLease = max(c.MaxLease, c.MinLease)
	def(&c.Think, 3*time.Millisecond, 3*time.Millisecond)
	def(&c.CallTimeout, 2*time.Second, 2*time.Second)
	def(&c.Tolerance, 5*time.Millisecond, 5*time.Millisecond)
	def(&c.CheckTimeout, 30*time.Second, 5*time.Minute)
	if c.OutDir == "" {
		c.OutDir = filepath.Join(os.TempDir(), "onceflow-linearizability")
	}
	return c
}

// DialFailed reports whether err comes from failing to connect: the call
// never reached the server. It is a sound Config.NotSent only for clients
// that do not retry a call they already sent (go-redis with MaxRetries -1;
// pgx never resends a query), since a retry's dial error says nothing of
// the first attempt.
func DialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
