// Package flow measures the receiver where messages and requests flow
// through the service: throughput of each transport with the receiver on
// and off ([TransportBench]), lease mode against transaction mode on the sql
// transport ([ModeBench]), and the latency the Idempotency-Key middleware
// adds to POST /v1/payments ([HTTPBench]).
//
// Each bench is built once and measured in rounds: every Round builds its
// own topics, consumer groups or server, so rounds of different contenders
// can be interleaved and their medians compared. A Round returns one
// figure (messages per second, or microseconds) and fails rather than
// return a figure from a round in which a message was lost.
//
// The benches use the real services they are given (Kafka, RabbitMQ,
// PostgreSQL, Redis); PostgreSQL work happens in a schema of the bench's
// own, dropped by Close. A bench is not safe for concurrent Rounds.
package flow
