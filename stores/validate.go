package stores

import (
	"fmt"
	"time"
)

// The Check functions validate arguments the same way for every store.
// Implementations call them before touching the backend, so that bad input
// gets the same clear error everywhere and never reaches the network.

// CheckClaim validates the arguments of Claim and returns the storage key.
func CheckClaim(key string, lease time.Duration) (string, error) {
	k, err := StorageKey(key)
	if err != nil {
		return "", err
	}
	return k, CheckDuration("lease", lease)
}

// CheckToken validates the key and token of Complete, Release and Extend and
// returns the storage key.
func CheckToken(key string, token Token) (string, error) {
	k, err := StorageKey(key)
	if err != nil {
		return "", err
	}
	if token == "" {
		return "", fmt.Errorf("%w: token is empty", ErrInvalidArgument)
	}
	return k, nil
}

// CheckDuration rejects a lease or TTL that is not positive; what names it
// in the error.
func CheckDuration(what string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: %s %v must be positive", ErrInvalidArgument, what, d)
	}
	return nil
}

// Micros converts a lease or TTL to whole microseconds, the unit the
// networked stores send to their backend, rounding up so that a positive
// duration is never shortened (nor becomes zero).
func Micros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if d%time.Microsecond != 0 {
		us++
	}
	return us
}
