package app

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
)

// With MIGRATE_ON_START=false a schema without the migrations stops
// start-up at once, in one line naming the command that fixes it.
func TestStartupRefusesAnOldSchema(t *testing.T) {
	t.Parallel()
	startupFails(t, []string{"STORE=postgres", "DATABASE_URL=" + testenv.PostgresSchema(t), "MIGRATE_ON_START=false"},
		"the database schema is at version 0 and this build needs", "", 5*time.Second)
	startupFails(t, []string{"STORE=postgres", "DATABASE_URL=" + testenv.PostgresSchema(t), "MIGRATE_ON_START=false"},
		"run `onceflow migrate up` with this DATABASE_URL first, or set MIGRATE_ON_START=true", "", 5*time.Second)
}
