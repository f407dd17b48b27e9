package flow

import (
	"strings"

	"github.com/google/uuid"
)

// shortID is 12 random hexadecimal digits, for names of the bench's own
// that must not collide with another run's.
func shortID() string { return strings.ReplaceAll(uuid.NewString(), "-", "")[:12] }
