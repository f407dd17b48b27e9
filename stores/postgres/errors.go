package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/puddle/v2"

	"github.com/onceflow/onceflow/stores"
)

// translate turns an error of the driver during op into the store contract's
// errors:
//   - when ctx is done, ctx's error, so that callers can tell their own
//     cancellation from an outage (pgx reports it wrapped in its own types);
//   - a closed pool: stores.ErrClosed, as an UnavailableError;
//   - anything else — connection refused or reset, a server shutting down
//     (SQLSTATE 57P01), a missing table, a failed transaction — as a
//     stores.UnavailableError that unwraps to the driver's cause
//     (*pgconn.PgError, *pgconn.ConnectError, ...), so that the receiver's
//     store-error policy applies and callers can still inspect it.
//
// Outcomes the contract defines, such as a lost lease, are not errors of the
// driver and never reach translate.
func translate(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, puddle.ErrClosedPool) {
		return stores.Unavailable(op, fmt.Errorf("%w: %w", stores.ErrClosed, err))
	}
	return stores.Unavailable(op, err)
}
