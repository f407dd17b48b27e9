package receiver

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of every span this package starts.
const tracerName = "github.com/onceflow/onceflow/middleware/receiver"

// Attributes of the spans the receiver and its faces start.
const (
	// AttrOutcome is the outcome of a receiver decision ([Outcome]), of a
	// store call (acquired, completed, in_progress, ok, lease_lost, error)
	// or of a message's handling (ack, nack).
	AttrOutcome = attribute.Key("onceflow.outcome")
	// AttrScope is the receiver's scope: a handler name, or http.
	AttrScope = attribute.Key("onceflow.scope")
	// AttrKey is the record key as the store keeps it (see
	// [stores.StorageKey]).
	AttrKey = attribute.Key("onceflow.key")
)

// endSpan sets span's outcome: ok on success, else failed with err.
func endSpan(span trace.Span, ok, failed string, err error) {
	if err == nil {
		span.SetAttributes(AttrOutcome.String(ok))
		return
	}
	span.SetAttributes(AttrOutcome.String(failed))
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
