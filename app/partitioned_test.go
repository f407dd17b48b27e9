package app

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/app/apptest/testdomain/flowtest"
	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/migrations"
)

// TestPartitionedLayoutInTransactionMode is TestInjectedFailureAfterLedgerWrite's
// transaction mode on the partitioned records layout: the service migrates
// the table partitioned, creates its partitions, and the claim made in the
// handler's transaction rolls back with the charge.
func TestPartitionedLayoutInTransactionMode(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	charges := flowtest.ChargesAfterInjectedFailure(t, start, flowtest.WithEffectKeys, "STORE=postgres", "DEDUP_MODE=transaction", "PG_RECORDS_LAYOUT=partitioned")
	if charges != 1 {
		t.Errorf("transaction mode on the partitioned layout: %d charges, want exactly 1", charges)
	}
}

// TestRecordsLayoutMismatchRefusesToStart: a table created in one layout is
// never driven with the other's statements.
func TestRecordsLayoutMismatchRefusesToStart(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	url := testenv.PostgresSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := migrations.UpURL(ctx, url); err != nil {
		t.Fatal(err)
	}
	startupFails(t, []string{"STORE=postgres", "DATABASE_URL=" + url, "PG_RECORDS_LAYOUT=partitioned"},
		"PG_RECORDS_LAYOUT=partitioned: records table idempotency_records has the rows layout, not partitioned", "", 20*time.Second)
}
