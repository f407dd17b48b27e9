package stores

import (
	"context"
	"fmt"
	"time"
)

// Admin is what an operator's tools need of a store beyond [Store]: reading
// a record, and removing one whoever owns it. The receiver never uses it;
// the key admin (package admin) does. Every store of this module implements
// it, and stores/storetest checks it with the rest of the contract.
//
// Both methods take the same key as [Store] (the storage key is derived by
// [StorageKey]), are one atomic operation against the backend, and judge
// expiry by the store's clock: a record whose lease or TTL has ended reads
// as absent, as it does for Claim.
type Admin interface {
	// Lookup returns key's live record, in progress or completed, without
	// changing anything. An absent or ended record gives ErrNotFound.
	Lookup(ctx context.Context, key string) (Entry, error)

	// Remove deletes key's record, in progress or completed, if it is still
	// the one Lookup read: the same token and the same status. It is a
	// compare-and-delete, so a record that changed since it was read
	// (completed by its owner, taken over, expired and claimed anew) is
	// left alone and ErrNotFound returned. Unlike Release it does not
	// require a live lease of the token's owner, and it removes completed
	// records too: it is how an operator frees a stuck key or lets a
	// completed one run again. Only read.Token and read.Status are used.
	Remove(ctx context.Context, key string, read Entry) error
}

// Entry is a live record as [Admin.Lookup] reads it.
type Entry struct {
	// Status is InProgress or Completed.
	Status Status
	// Token identifies this acquisition of the key (the owner's fencing
	// token, kept once completed); Remove takes it back.
	Token Token
	// LeaseUntil is the owner's lease end while in progress; zero once
	// completed.
	LeaseUntil time.Time
	// Record holds the fingerprint and creation time, and once completed
	// the result, completion time and expiry.
	Record Record
}

// CheckRemove validates the arguments of Remove and returns the storage
// key: a key, and an entry with a token and a status of a live record.
func CheckRemove(key string, read Entry) (string, error) {
	k, err := CheckToken(key, read.Token)
	if err == nil && read.Status != InProgress && read.Status != Completed {
		err = fmt.Errorf("%w: status %v is not in_progress or completed", ErrInvalidArgument, read.Status)
	}
	return k, err
}
