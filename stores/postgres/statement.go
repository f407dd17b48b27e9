package postgres

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ClaimStatement returns the statement Claim runs on table ("name" or
// "schema.name", quoted as New quotes it), with its parameters: $1 the
// storage key, $2 the new token (text), $3 the fingerprint (bytea) and $4 the
// lease in microseconds. It lets tools that drive PostgreSQL themselves, such
// as a pgbench script, run exactly the store's claim.
func ClaimStatement(table string) (string, error) {
	parts := strings.Split(table, ".")
	if len(parts) > 2 || slices.Contains(parts, "") {
		return "", fmt.Errorf("invalid table name %q: want name or schema.name", table)
	}
	return fmt.Sprintf(claimSQL, pgx.Identifier(parts).Sanitize()), nil
}
