// Package payments hands the example payments domain to the service: its
// message routes and HTTP API on a ledger (PostgreSQL with DATABASE_URL,
// memory otherwise) and a payment provider (PAYMENT_PROVIDER_URL, or one
// started in process), the ledger's migrations, the errors no redelivery
// fixes, its traffic commands and `onceflow provider`. cmd/onceflow picks
// it in one line; a fork replaces handlers/ and that line.
package payments

import (
	"context"
	"errors"
	"net/http"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers"
	"github.com/onceflow/onceflow/handlers/memory"
	ledgerpg "github.com/onceflow/onceflow/handlers/postgres"
	"github.com/onceflow/onceflow/handlers/provider"
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
		Permanent:  permanent,
		Malformed:  func(err error) bool { return errors.Is(err, handlers.ErrMalformed) },
		Open:       open,
		Commands:   commands(),
	}
}

// permanent reports the domain's errors that no redelivery fixes: a
// malformed message, and a charge the provider refused for good.
func permanent(err error) bool {
	return errors.Is(err, handlers.ErrMalformed) || errors.Is(err, provider.ErrRefused)
}

// commands are the traffic commands and `onceflow provider`.
func commands() map[string]domain.Command {
	c := traffic.Commands()
	c["provider"] = provider.Command()
	return c
}

// open builds the handlers on the ledger — in PostgreSQL when the service
// has a database, so that replicas share it and, in
// DEDUP_MODE=transaction, its writes join the unit of work their context
// carries; in memory otherwise — and on the payment provider of
// PAYMENT_PROVIDER_URL, or one it starts in process.
func open(ctx context.Context, deps domain.Deps) (*domain.Parts, error) {
	var ledger handlers.Ledger = memory.NewLedger()
	if deps.DB != nil {
		ledger = ledgerpg.NewLedger(deps.DB, ledgerpg.WithTxFromContext(storepg.TxFromContext))
	}
	charger, closeProvider, err := openCharger(ctx, deps)
	if err != nil {
		return nil, err
	}
	api := handlers.NewHTTP(ledger, deps.Publisher, deps.Logger)
	return &domain.Parts{
		Routes: handlers.NewMessageHandlers(ledger, charger, deps.Logger).Routes(),
		HTTP: domain.HTTP{
			Register:         func(mux *http.ServeMux, idempotent func(http.Handler) http.Handler) { api.Routes(mux, idempotent) },
			IdempotentRoutes: handlers.IdempotentRoutes(),
			MaxRequestBody:   handlers.MaxRequestBody,
			ReplayedHeaders:  []string{handlers.CorrelationIDHeader},
		},
		Close: closeProvider,
	}, nil
}
