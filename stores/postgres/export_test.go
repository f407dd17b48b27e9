package postgres

// QueuedClaims returns how many Claims wait for a batch, 0 when batching is
// off.
func (s *Store) QueuedClaims() int {
	if s.batch == nil {
		return 0
	}
	return s.batch.claim.Queued()
}

// QueuedCompletes returns how many Completes wait for a batch, 0 when
// batching is off.
func (s *Store) QueuedCompletes() int {
	if s.batch == nil {
		return 0
	}
	return s.batch.complete.Queued()
}
