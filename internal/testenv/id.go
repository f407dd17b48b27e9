package testenv

import "github.com/google/uuid"

// NewID returns a random identifier for names that must not collide between
// tests and runs.
func NewID() string { return uuid.NewString() }
