// Package shop is a small domain that replaces the payments example in
// `make example-check`: one message route, one HTTP endpoint, one
// migration. POST /v1/orders accepts an order and publishes OrderPlaced;
// the route record_order writes one row per order it records.
package shop

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/middleware/consume"
	"github.com/onceflow/onceflow/problem"
)

// TopicOrderPlaced carries OrderPlaced events.
const TopicOrderPlaced = "orders.placed"

// ErrMalformed marks a message that no redelivery can fix.
var ErrMalformed = errors.New("malformed order")

// OrderPlaced is the event POST /v1/orders publishes.
type OrderPlaced struct {
	OrderID string `json:"order_id"`
	Item    string `json:"item"`
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Domain is the shop.
func Domain() domain.Domain {
	files, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err)
	}
	return domain.Domain{
		Name:       "shop",
		Migrations: files,
		Permanent:  func(err error) bool { return errors.Is(err, ErrMalformed) },
		Open:       open,
	}
}

func open(_ context.Context, deps domain.Deps) (*domain.Parts, error) {
	if deps.DB == nil {
		return nil, errors.New("the shop keeps its orders in PostgreSQL: set DATABASE_URL")
	}
	record := func(msg *message.Message) error {
		var o OrderPlaced
		if err := json.Unmarshal(msg.Payload, &o); err != nil || o.OrderID == "" {
			return ErrMalformed
		}
		// One row per execution, on purpose: only the receiver keeps an
		// order from being recorded twice.
		_, err := deps.DB.Exec(msg.Context(), "INSERT INTO recorded_orders (order_id, item) VALUES ($1, $2)", o.OrderID, o.Item)
		return err
	}
	place := func(w http.ResponseWriter, r *http.Request) {
		var o OrderPlaced
		if err := json.NewDecoder(r.Body).Decode(&o); err != nil || o.OrderID == "" {
			problem.Write(w, problem.New(problem.Invalid, "the body must be a JSON order with an order_id"))
			return
		}
		payload, _ := json.Marshal(o)
		msg := message.NewMessage(watermill.NewUUID(), payload)
		msg.Metadata.Set(consume.MetadataKey, o.OrderID)
		msg.SetContext(r.Context())
		if err := deps.Publisher.Publish(TopicOrderPlaced, msg); err != nil {
			problem.Write(w, err)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}
	return &domain.Parts{
		Routes: domain.Routes{{Name: "record_order", Consumes: TopicOrderPlaced, Consume: record}},
		HTTP: domain.HTTP{
			Register: func(mux *http.ServeMux, idempotent func(http.Handler) http.Handler) {
				mux.Handle("POST /v1/orders", idempotent(http.HandlerFunc(place)))
			},
			IdempotentRoutes: []string{"POST /v1/orders"},
		},
	}, nil
}
