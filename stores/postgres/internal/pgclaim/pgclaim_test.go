package pgclaim_test

import (
	"testing"

	"github.com/onceflow/onceflow/stores/postgres/internal/pgclaim"
)

func TestOnRejectsABadTableName(t *testing.T) {
	if _, err := pgclaim.On(pgclaim.BatchSQL, "a.b.c"); err == nil {
		t.Error("no error for a three-part table name")
	}
}
