package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/onceflow/onceflow/stores"
)

var _ stores.Admin = (*Store)(nil)

// errNoAdmin is returned when the wrapped store does not implement
// [stores.Admin].
var errNoAdmin = errors.New("the wrapped store does not implement stores.Admin")

// Lookup implements [stores.Admin]: it always reads the wrapped store, the
// record as it stands there, never the local copy.
func (s *Store) Lookup(ctx context.Context, key string) (stores.Entry, error) {
	a, ok := s.next.(stores.Admin)
	if !ok {
		return stores.Entry{}, fmt.Errorf("looking up key %q: %w", key, errNoAdmin)
	}
	return a.Lookup(ctx, key)
}

// Remove implements [stores.Admin]: it removes the record from the wrapped
// store and drops this process's copy, whatever the wrapped store answers.
// Other processes' caches keep theirs for up to their Config.MaxAge.
func (s *Store) Remove(ctx context.Context, key string, read stores.Entry) error {
	a, ok := s.next.(stores.Admin)
	if !ok {
		return fmt.Errorf("removing key %q: %w", key, errNoAdmin)
	}
	err := a.Remove(ctx, key, read)
	s.drop(key, read.Token)
	return err
}
