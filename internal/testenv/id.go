package testenv

import "github.com/google/uuid"

// NewID returns a random identifier for names that must not collide between
// tests and runs.
func NewID() string { return uuid.NewString() }

// Names returns a topic prefix and a service name unique to a test, so that
// tests sharing a broker never share a topic, an exchange, a queue or a
// consumer group.
func Names() (prefix, service string) {
	id := NewID()[:8]
	return "test." + id + ".", "onceflow-" + id
}
