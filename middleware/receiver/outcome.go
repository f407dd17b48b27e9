package receiver

// Outcome is how one call of [Receiver.Execute] ended. It is the label of the
// onceflow_receiver_outcomes_total metric.
type Outcome string

// Outcomes of Execute.
const (
	// OutcomeProcessed: the function ran and its result was recorded.
	OutcomeProcessed Outcome = "processed"
	// OutcomeDuplicate: the key was already completed with the same
	// fingerprint; the function did not run and the stored result is
	// returned.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeInProgress: another owner holds the key; ErrInProgress is
	// returned.
	OutcomeInProgress Outcome = "in_progress"
	// OutcomeFingerprintMismatch: the key is known with a different
	// fingerprint (a key reused for another payload); the function did not
	// run and ErrFingerprintMismatch is returned.
	OutcomeFingerprintMismatch Outcome = "fingerprint_mismatch"
	// OutcomeLeaseLost: the lease ended while the function ran and the key
	// may have been taken over. If the function succeeded its result is
	// still returned; if it failed its error is.
	OutcomeLeaseLost Outcome = "lease_lost"
	// OutcomeStoreError: the store failed. At claim time under FailClosed the
	// error is returned and the function did not run; after the function
	// succeeded, its result could not be recorded (lease mode: the result
	// is returned; transaction mode: everything rolled back and the error
	// is returned).
	OutcomeStoreError Outcome = "store_error"
	// OutcomeFailOpen: the store was unavailable and, under FailOpen, the
	// function ran without a record.
	OutcomeFailOpen Outcome = "fail_open"
	// OutcomeFailed: the function returned an error or panicked; its claim
	// was released so that a retry can run it again.
	OutcomeFailed Outcome = "failed"
	// OutcomeNotStored: the function succeeded but its result must not be
	// recorded (its [OutcomeError] says so; the HTTP face: a response
	// larger than its limit), so the claim was released like a failure's
	// and a retry runs it again.
	OutcomeNotStored Outcome = "not_stored"
	// OutcomeStoreFull: the store holds as many records as it may
	// ([stores.ErrFull]); the function did not run and the error is
	// returned, under either store-error policy, so that the transport
	// redelivers and the HTTP face answers 503.
	OutcomeStoreFull Outcome = "store_full"
	// OutcomeRateLimited: a face refused a call that would have created a
	// record, because its client is over its quota (its [OutcomeError]
	// says so; the HTTP face's client quota); the handler did not run and
	// no record was kept. Counted by the face itself when it refuses
	// before claiming.
	OutcomeRateLimited Outcome = "rate_limited"
)

// Outcomes lists every Outcome, for pre-initialising metrics.
func Outcomes() []Outcome {
	all := outcomeOrder
	return all[:]
}

// outcomeOrder is every Outcome, in the order Outcomes returns them.
var outcomeOrder = [...]Outcome{
	OutcomeProcessed, OutcomeDuplicate, OutcomeInProgress,
	OutcomeFingerprintMismatch, OutcomeLeaseLost, OutcomeStoreError,
	OutcomeFailOpen, OutcomeFailed, OutcomeNotStored,
	OutcomeStoreFull, OutcomeRateLimited,
}

// Result is what Execute reports besides its error.
type Result struct {
	// Outcome says what happened.
	Outcome Outcome
	// Value is the function's result (processed, lease_lost, store_error
	// after the function ran in lease mode, fail_open) or the stored result
	// (duplicate).
	Value []byte
}
