package broker

import (
	"context"
	"time"
)

// UntilDeadline is what is left of ctx's deadline (at least 10ms), or a
// second when ctx has none: the dial and read timeout of a readiness
// check's own connection, whose client takes no context.
//
// A broker's readiness check asks it on a connection that lasts: the
// transport's own where it can be asked, otherwise one the check keeps
// for itself between checks. A check dials again only after its
// connection failed, and then at once, so that a connection the broker
// closed while idle does not make a ready broker look down. A probe storm
// therefore costs the broker round trips on one connection, never a
// connection each.
func UntilDeadline(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), 10*time.Millisecond)
	}
	return time.Second
}
