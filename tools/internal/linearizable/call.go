package linearizable

import "github.com/onceflow/onceflow/stores"

// kind is the store method a call invoked.
type kind uint8

const (
	claimCall kind = iota + 1
	completeCall
	releaseCall
	extendCall
	lookupCall
)

// input is one call as its client made it.
type input struct {
	kind        kind
	key         string
	fingerprint string       // claim
	token       stores.Token // complete, release, extend
	result      string       // complete
	lease       int64        // claim, extend
	ttl         int64        // complete
	call        int64        // when the call was invoked
}

// outcome classifies what a call returned.
type outcome uint8

const (
	succeeded outcome = iota + 1
	leaseLost         // ErrLeaseLost
	notFound          // ErrNotFound (Lookup)
	unknown           // an error after which the effect may or may not have happened
)

// output is what a call returned, and when.
type output struct {
	outcome     outcome
	ret         int64         // when it returned; never when unknown
	status      stores.Status // claim, lookup
	token       stores.Token  // claim (acquired), lookup
	fingerprint string        // claim (in progress, completed), lookup
	result      string        // claim (completed), lookup
	leaseUntil  int64         // claim (acquired, in progress), extend, lookup
	expiresAt   int64         // claim (completed), lookup
	err         string        // the error of an unknown outcome
}
