// Package payments hands the example payments domain to the service: its
// message routes and HTTP API on a ledger (PostgreSQL with DATABASE_URL,
// memory otherwise), the ledger's migrations, the errors no redelivery
// fixes, and its traffic commands. cmd/onceflow picks it in one line; a
// fork replaces handlers/ and that line.
package payments

import (
	"context"
	"errors"
	"net/http"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/memory"
	ledgerpg "github.com/onceflow/onceflow/handlers/postgres"
	"github.com/onceflow/onceflow/handlers/traffic"
	storepg "github.com/onceflow/onceflow/stores/postgres"
)

// Name is the domain's name: its migrations are versioned in
// goose_db_version_payments.
const Name = "payments"

// Domain is the payments domain.
func Domain() domain.Domain {
	return domain.Domain{
		Name:       Name,
		Migrations: ledgerpg.Migrations(),
		Permanent:  func(err error) bool { return errors.Is(err, handlers.ErrMalformed) },
		Open:       open,
		Commands:   traffic.Commands(),
	}
}

// open builds the handlers on the ledger: in PostgreSQL when the service
// has a database, so that replicas share it and, in
// DEDUP_MODE=transaction, its writes join the unit of work their context
// carries; in memory otherwise.
func open(_ context.Context, deps domain.Deps) (*domain.Parts, error) {
	var ledger handlers.Ledger = memory.NewLedger()
	if deps.DB != nil {
		ledger = ledgerpg.NewLedger(deps.DB, ledgerpg.WithTxFromContext(storepg.TxFromContext))
	}
	api := handlers.NewHTTP(ledger, deps.Publisher, deps.Logger)
	return &domain.Parts{
		Routes: handlers.NewMessageHandlers(ledger, deps.Logger).Routes(),
		HTTP: domain.HTTP{
			Register:         func(mux *http.ServeMux, idempotent func(http.Handler) http.Handler) { api.Routes(mux, idempotent) },
			IdempotentRoutes: handlers.IdempotentRoutes(),
			MaxRequestBody:   handlers.MaxRequestBody,
		},
	}, nil
}
