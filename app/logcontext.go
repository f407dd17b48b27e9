package app

import (
	"context"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill/message"
	wmmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"go.opentelemetry.io/otel/trace"
)

// correlationKey is the context key of the correlation id of the message
// being handled (see logContext).
type correlationKey struct{}

// maxCorrelationID bounds, in bytes, a correlation id the log repeats: a
// UUID is 36. The id comes from whoever published the message, and each
// line logged about it would carry all of it.
const maxCorrelationID = 128

// logContext is a router middleware that puts the message's correlation id
// (Watermill's metadata correlation_id) in its context, where the App's
// logger finds it: every line logged with the context of the delivery
// carries it (see withContextAttrs). An id longer than maxCorrelationID
// is left out.
func logContext(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		id := wmmw.MessageCorrelationID(msg)
		if id == "" || len(id) > maxCorrelationID {
			return h(msg)
		}
		outer := msg.Context()
		defer msg.SetContext(outer)
		msg.SetContext(context.WithValue(outer, correlationKey{}, id))
		return h(msg)
	}
}

// withContextAttrs returns logger adding to each record logged with a
// context (InfoContext and the like) what the context knows of the work in
// hand: correlation_id, the message's (see logContext), and trace_id and
// span_id, the span's when tracing is on. Lines without them stay as they
// were.
func withContextAttrs(logger *slog.Logger) *slog.Logger {
	return slog.New(contextAttrs{logger.Handler()})
}

// contextAttrs is the slog.Handler of withContextAttrs.
type contextAttrs struct{ slog.Handler }

func (h contextAttrs) Handle(ctx context.Context, rec slog.Record) error {
	if id, ok := ctx.Value(correlationKey{}).(string); ok {
		rec.AddAttrs(slog.String("correlation_id", id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		rec.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h contextAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return contextAttrs{h.Handler.WithAttrs(attrs)}
}

func (h contextAttrs) WithGroup(name string) slog.Handler {
	return contextAttrs{h.Handler.WithGroup(name)}
}
