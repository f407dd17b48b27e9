// Package chaos is the payments example's fault suite: it runs the built
// onceflow binary (with the faults build tag) as separate processes
// against real services, breaks things while they work, and measures what
// the ledger holds afterwards: the fault suite behind `make chaos` and
// docs/RELIABILITY.md.
//
// A test builds the binary once (Build), opens a Row for one scenario x
// transport x mode (NewRow: its own topic prefix, service name, PostgreSQL
// schema and, for Kafka, the in-process broker), starts instances
// (Row.Start), publishes with an independent plain-Watermill producer
// (Row.Publish), breaks something (Instance.Kill, Instance.Term, a store or
// broker of its own), waits until every payment is charged and notified and
// the counts are stable (Row.WaitFinished, bounded: a row that does not
// finish is reported as stalled) and adds its figures to a Report.
//
// Nothing here is a mock: instances are real processes, the ledger is read
// from PostgreSQL, peak RSS from /proc.
package chaos
