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

// The ways to a second charge that the network and process faults
// measure.
const (
	riskPartition  = "Lease mode, an instance cut from its record store while its handlers run: its leases expire, another instance takes the messages over and charges again while the first, unaware, finishes its own"
	riskPause      = "Lease mode, an instance frozen longer than its lease (a long pause, a frozen VM): another instance takes its messages over, and the frozen one, once it goes on, finishes what it had begun"
	riskHalfOpen   = "Lease mode, a store link that stops answering: claims and records reach the store but their answers do not, so the handler's run is released or left to its lease and a copy charges again"
	riskFailover   = "Redis failover: a record written to the master and not yet replicated is lost when the replica is promoted, and a copy then charges again; REDIS_WAIT_REPLICAS makes Complete wait until a replica has it"
	riskLostAnswer = "A charge whose answer is lost (a timeout, a half-open connection to the provider): the provider charged, the handler fails, and its retry charges again, in either mode"
	riskSlowStore  = "Lease mode, a record store slower than the lease can bear: a lease expires before its record is completed and a copy charges again"
)
