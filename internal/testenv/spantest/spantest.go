// Package spantest reads the spans an in-memory exporter
// (go.opentelemetry.io/otel/sdk/trace/tracetest) recorded, for tests that
// check the shape of a trace: which spans exist, which descends from
// which, and their attributes.
package spantest

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Index finds recorded spans by name and by id.
type Index struct {
	stubs tracetest.SpanStubs
	byID  map[trace.SpanID]tracetest.SpanStub
}

// New indexes stubs.
func New(stubs tracetest.SpanStubs) Index {
	ix := Index{stubs: stubs, byID: map[trace.SpanID]tracetest.SpanStub{}}
	for _, s := range stubs {
		ix.byID[s.SpanContext.SpanID()] = s
	}
	return ix
}

// Has reports whether there is a span of each of names.
func (ix Index) Has(names ...string) bool {
	for _, n := range names {
		if len(ix.All(n)) == 0 {
			return false
		}
	}
	return true
}

// Named is the one span called name; the test fails when there is none or
// more than one.
func (ix Index) Named(t testing.TB, name string) tracetest.SpanStub {
	t.Helper()
	found := ix.All(name)
	if len(found) != 1 {
		var names []string
		for _, s := range ix.stubs {
			names = append(names, s.Name)
		}
		t.Fatalf("%d spans %q, want one, among %q", len(found), name, names)
	}
	return found[0]
}

// All is every span called name, in the order they were recorded.
func (ix Index) All(name string) []tracetest.SpanStub {
	var found []tracetest.SpanStub
	for _, s := range ix.stubs {
		if s.Name == name {
			found = append(found, s)
		}
	}
	return found
}

// AnyDescends reports whether a span called name descends from a span
// called ancestor.
func (ix Index) AnyDescends(name, ancestor string) bool {
	for _, s := range ix.All(name) {
		for _, a := range ix.All(ancestor) {
			if ix.Descends(s, a) {
				return true
			}
		}
	}
	return false
}

// Descends reports whether s is a descendant of ancestor among the
// recorded spans.
func (ix Index) Descends(s, ancestor tracetest.SpanStub) bool {
	for s.Parent.IsValid() {
		if s.Parent.SpanID() == ancestor.SpanContext.SpanID() {
			return true
		}
		p, ok := ix.byID[s.Parent.SpanID()]
		if !ok {
			return false
		}
		s = p
	}
	return false
}

// Attr is the value of s's attribute key as a string, or "".
func Attr(s tracetest.SpanStub, key attribute.Key) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.String()
		}
	}
	return ""
}
