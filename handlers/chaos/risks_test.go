package chaos

// The ways to a second charge that rows measure (Result.Risk), as the
// report's "What can still charge twice" names them.
const (
	riskForgetfulStore  = "A Redis that forgets (no append-only file, restarted): every record is gone, so every later copy is charged again"
	riskCrashWindow     = "Lease mode's crash window: an instance killed after its handler's effect and before its record is completed; a copy after the lease charges again"
	riskFailAfterEffect = "Lease mode, a handler that fails after its effect: the claim is released and the retry charges again"
	riskStoreBetween    = "Lease mode, the record store failing between a handler's effect and its record: the claim stays in progress, and a copy after the lease charges again"
	riskFailOpen        = "DEDUP_ON_STORE_ERROR=fail-open during a store outage: copies are processed unguarded"
	riskShortTTL        = "DEDUP_TTL shorter than the broker's redelivery window: a copy that arrives after its record expired is charged again"
)
