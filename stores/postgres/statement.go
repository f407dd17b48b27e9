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
	return statement(claimSQL, table)
}

// ClaimBatchStatement returns the statement a batch of Claims runs on table
// in the rows layout, as ClaimStatement does for one: $1 the storage keys
// (text[], distinct), $2 their new tokens (text[]), $3 their fingerprints
// (bytea[]) and $4 their leases in microseconds (bigint[]). It returns each
// key's row with its token; a key was acquired when the token is the one
// offered.
func ClaimBatchStatement(table string) (string, error) {
	return statement(claimBatchSQL, table)
}

// statement returns sql with table quoted in.
func statement(sql, table string) (string, error) {
	quoted, err := quoteTable(table)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(sql, quoted), nil
}

// quoteTable quotes table, "name" or "schema.name", as an identifier.
func quoteTable(table string) (string, error) {
	parts := strings.Split(table, ".")
	if len(parts) > 2 || slices.Contains(parts, "") {
		return "", fmt.Errorf("invalid table name %q: want name or schema.name", table)
	}
	return pgx.Identifier(parts).Sanitize(), nil
}
