package postgres

import "github.com/onceflow/onceflow/stores/postgres/internal/pgclaim"

// ClaimSQL returns the statements with which a Store in the rows layout
// claims keys in table ("name" or "schema.name", quoted as Config.Table
// is): one, for a key alone, and batch, for many distinct keys in one
// statement. They are for tools that drive PostgreSQL themselves and
// measure the store's own claim, as the bench's pgbench scripts do; a
// Store's user never needs them. It fails only when table is not "name" or
// "schema.name".
//
// one's parameters are $1 the storage key, $2 the new token (text), $3 the
// fingerprint (bytea) and $4 the lease in microseconds; it returns one row,
// whether the token now owns the key and then the record. batch takes the
// same as arrays ($1 text[] of distinct keys, $2 text[], $3 bytea[],
// $4 bigint[]) and returns one row per key, the key and its token first.
// Run on a Store's table, they claim for that Store, as its own Claims do.
func ClaimSQL(table string) (one, batch string, err error) {
	if one, err = pgclaim.On(pgclaim.SQL, table); err != nil {
		return "", "", err
	}
	batch, err = pgclaim.On(pgclaim.BatchSQL, table)
	return one, batch, err
}
