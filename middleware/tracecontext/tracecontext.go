// Package tracecontext carries the W3C trace context through Watermill, in
// message metadata ([MetadataCarrier]), so that one trace follows a message
// from its publisher into every handler and the messages they produce. It
// is apart from package consume so that a service that does not trace
// links none of OpenTelemetry's propagation (nor net/http, which it
// imports).
package tracecontext

import (
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceflow/onceflow/middleware/receiver"
)

// tracerName is the instrumentation scope of every span this package starts.
const tracerName = "github.com/onceflow/onceflow/middleware/tracecontext"

// MetadataCarrier carries a trace context in a message's metadata, for an
// OpenTelemetry [propagation.TextMapPropagator]: with the W3C propagator,
// the fields traceparent and tracestate travel with the message through
// any broker that keeps metadata, and through the outbox relay, which keeps
// it too.
type MetadataCarrier message.Metadata

var _ propagation.TextMapCarrier = MetadataCarrier(nil)

// Get returns the value of key, or "".
func (c MetadataCarrier) Get(key string) string { return c[key] }

// Set sets key to value. The carrier must not be nil.
func (c MetadataCarrier) Set(key, value string) { c[key] = value }

// Keys lists the keys of the metadata.
func (c MetadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// carrier returns msg's metadata as a carrier, creating it if it is nil.
func carrier(msg *message.Message) MetadataCarrier {
	if msg.Metadata == nil {
		msg.Metadata = message.Metadata{}
	}
	return MetadataCarrier(msg.Metadata)
}

// Messages carries W3C trace context through Watermill: [Messages.Consume]
// continues the trace a message carries, [Messages.Produce] and
// [Messages.Publisher] write the current one into the messages going out.
// A nil *Messages traces nothing and costs nothing: each method returns
// what it was given. Safe for concurrent use.
type Messages struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// New starts spans on tp and reads and writes message metadata with prop
// (for instance [propagation.TraceContext]).
func New(tp trace.TracerProvider, prop propagation.TextMapPropagator) *Messages {
	return &Messages{tracer: tp.Tracer(tracerName), prop: prop}
}

// Consume is a router middleware that runs each delivery in a consumer span
// named after its handler, the child of the trace context in the message's
// metadata (a new trace when there is none). The span records the topic and
// the message UUID, and ends with onceflow.outcome ack, or nack with the
// error (a panic is a nack too, and goes on to the recoverer): the
// attribute [receiver.AttrOutcome]. Register it
// outside the poison queue and the retries, so that one span covers every
// attempt.
func (t *Messages) Consume(h message.HandlerFunc) message.HandlerFunc {
	if t == nil {
		return h
	}
	return func(msg *message.Message) ([]*message.Message, error) {
		outer := msg.Context()
		defer msg.SetContext(outer)
		ctx := t.prop.Extract(outer, carrier(msg))
		ctx, span := t.tracer.Start(ctx, message.HandlerNameFromCtx(outer),
			trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(
				semconv.MessagingDestinationName(message.SubscribeTopicFromCtx(outer)),
				semconv.MessagingMessageID(msg.UUID),
				semconv.MessagingOperationTypeProcess,
			))
		defer span.End()
		defer func() {
			if p := recover(); p != nil {
				endSpan(span, "ack", "nack", fmt.Errorf("panic: %v", p))
				panic(p)
			}
		}()
		msg.SetContext(ctx)
		out, err := h(msg)
		endSpan(span, "ack", "nack", err)
		return out, err
	}
}

// Produce is a router middleware that writes the trace context of the
// handler's run into the metadata of every message the handler produces, so
// that their consumers continue the trace. Register it innermost, inside
// the receiver: the receiver stores the produced messages (and in
// transaction mode writes them to the outbox) with their metadata, so a
// replayed duplicate carries the trace context of the run that produced it.
func (t *Messages) Produce(h message.HandlerFunc) message.HandlerFunc {
	if t == nil {
		return h
	}
	return func(msg *message.Message) ([]*message.Message, error) {
		ctx := msg.Context()
		out, err := h(msg)
		for _, m := range out {
			t.prop.Inject(ctx, carrier(m))
		}
		return out, err
	}
}

// Publisher returns pub with a producer span per message, named "publish"
// and the topic: the child of the span in the message's context or, when
// it has none, of the trace context in its metadata. The span's context is
// written into the metadata before pub publishes, and the span ends with
// pub's error.
func (t *Messages) Publisher(pub message.Publisher) message.Publisher {
	if t == nil {
		return pub
	}
	return tracedPublisher{Publisher: pub, t: t}
}

type tracedPublisher struct {
	message.Publisher
	t *Messages
}

func (p tracedPublisher) Publish(topic string, msgs ...*message.Message) error {
	spans := make([]trace.Span, len(msgs))
	for i, m := range msgs {
		parent := m.Context()
		if !trace.SpanContextFromContext(parent).IsValid() {
			parent = p.t.prop.Extract(parent, carrier(m))
		}
		ctx, span := p.t.tracer.Start(parent, "publish "+topic,
			trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(
				semconv.MessagingDestinationName(topic),
				semconv.MessagingMessageID(m.UUID),
				semconv.MessagingOperationTypeSend,
			))
		p.t.prop.Inject(ctx, carrier(m))
		spans[i] = span
	}
	err := p.Publisher.Publish(topic, msgs...)
	for _, span := range spans {
		endSpan(span, "ok", "error", err)
		span.End()
	}
	return err
}

// endSpan sets span's outcome ([receiver.AttrOutcome]): ok on success,
// else failed with err.
func endSpan(span trace.Span, ok, failed string, err error) {
	if err == nil {
		span.SetAttributes(receiver.AttrOutcome.String(ok))
		return
	}
	span.SetAttributes(receiver.AttrOutcome.String(failed))
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
