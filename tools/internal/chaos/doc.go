// Package chaos is the template's fault suite: it runs the service on the
// template's own test domain (app/apptest/testdomain), built as the
// suite's binary (package faultservice below this one), as separate
// processes against real services, breaks things while they work, and
// measures what the test domain's ledger and its provider hold afterwards:
// the fault suite behind `make chaos` and docs/RELIABILITY.md. It stands on
// nothing a fork deletes, so a fork keeps it.
//
// A test builds the binary once (Build), opens a Row for one scenario x
// transport x mode (NewRow: its own topic prefix, service name, PostgreSQL
// schema, provider and, for Kafka, the in-process broker), starts
// instances (Row.Start), publishes requests with an independent
// plain-Watermill producer (Row.Publish), breaks something (Instance.Kill,
// Instance.Term, a store or broker of its own), waits until every request
// is charged and notified and the counts are stable (Row.WaitFinished,
// bounded: a row that does not finish is reported as stalled) and adds its
// figures to a Report. The rows that run on every broker take the brokers
// from the service's picker (transport.Kinds), so a fork that removes a
// broker keeps the others' rows.
//
// Nothing here is a mock: instances are real processes, the ledger and the
// provider's charges are read from PostgreSQL, peak RSS from /proc.
package chaos
