package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceflow/onceflow/middleware/tracecontext"
)

// tracingFlushTimeout bounds the export of the last spans at Close.
const tracingFlushTimeout = 5 * time.Second

// tracing is the App's OpenTelemetry tracing, on when an OTLP endpoint is
// configured (or a test gives an exporter). Off, every field is nil and
// nothing is traced: no provider, no middleware, no cost. The provider is
// the App's own, never the global one, so Apps in one process do not mix
// their spans.
type tracing struct {
	provider trace.TracerProvider          // nil when off
	prop     propagation.TextMapPropagator // W3C trace context only: see below
	messages *tracecontext.Messages        // nil when off
}

// openTracing starts the tracer provider: spans are batched to the OTLP/HTTP
// endpoint of Config.otlpTracesURL. The rest of the exporter's settings
// (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE...) and
// the sampler (OTEL_TRACES_SAMPLER, default parentbased_always_on) are the
// SDK's, read from the process environment; the service is named
// SERVICE_NAME unless OTEL_SERVICE_NAME says otherwise. Close flushes the
// spans still batched.
func (b *assembly) openTracing(ctx context.Context) error {
	endpoint, err := b.cfg.otlpTracesURL()
	if err != nil {
		return err
	}
	var export sdktrace.TracerProviderOption
	switch {
	case b.seams.spans != nil:
		export = sdktrace.WithSyncer(b.seams.spans)
	case endpoint != "":
		if u, _ := url.Parse(endpoint); u.RawQuery != "" || u.User != nil {
			b.logger.Warn("the OTLP exporter sends neither the query nor the user part of its endpoint's URL: " +
				"pass the collector's credentials in OTEL_EXPORTER_OTLP_HEADERS")
		}
		exporter, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
		if err != nil {
			return fmt.Errorf("creating the OTLP trace exporter for %s: %w", redact(endpoint), err)
		}
		export = sdktrace.WithBatcher(exporter)
	default:
		return nil
	}
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName(b.cfg.ServiceName)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return fmt.Errorf("describing the service for tracing: %w", err)
	}
	tp := sdktrace.NewTracerProvider(export, sdktrace.WithResource(res))
	b.closers = append(b.closers, func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushTimeout)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("flushing traces: %w", err)
		}
		return nil
	})
	b.tracing.provider = tp
	// No baggage: the service reads none, and a client's (up to 8 KB)
	// would ride every message it causes.
	b.tracing.prop = propagation.TraceContext{}
	b.tracing.messages = tracecontext.New(tp, b.tracing.prop)
	return nil
}

// api wraps the API in a server span per request, named after the method
// and the route pattern of routes that serves it (POST /v1/orders), the
// child of the caller's W3C traceparent header when there is one. Off, it
// returns api as it is.
func (t tracing) api(api http.Handler, routes *http.ServeMux) http.Handler {
	if t.provider == nil {
		return api
	}
	return otelhttp.NewHandler(api, "api",
		otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithPropagators(t.prop),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			_, pattern := routes.Handler(r)
			switch {
			case pattern == "":
				return r.Method // no route: keep the name's cardinality low
			case strings.Contains(pattern, " "):
				return pattern // "POST /v1/orders"
			}
			return r.Method + " " + pattern
		}))
}

// otlpTracesURL is where traces are exported, after the OpenTelemetry
// convention: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
// OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended; "" when neither is
// set (tracing off). Only OTLP over HTTP (protobuf) is offered, the
// collectors' port 4318.
func (c Config) otlpTracesURL() (string, error) {
	name, raw := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", c.OTLPTracesEndpoint
	if raw == "" {
		name, raw = "OTEL_EXPORTER_OTLP_ENDPOINT", c.OTLPEndpoint
	}
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s=%q is not allowed: use an http:// or https:// URL such as http://localhost:4318", name, redact(raw))
	}
	if name == "OTEL_EXPORTER_OTLP_ENDPOINT" {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	return u.String(), nil
}

// logOTelErrors sends the errors of the OpenTelemetry SDK (a batch of spans
// the collector did not take) to logger as warnings, in the service's log
// format, instead of the SDK's own unstructured lines. OpenTelemetry keeps
// one handler per process, so the service's main sets it (Serve), not New.
func logOTelErrors(logger *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("tracing: the OpenTelemetry SDK failed", "err", err)
	}))
}
