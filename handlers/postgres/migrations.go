package postgres

import (
	"embed"
	"io/fs"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations holds the ledger's tables: the payments domain's goose
// migrations, versioned apart from the idempotency records'.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the embedded directory exists: the build embeds it
	}
	return sub
}
