// Package app is onceflow's only composition root. It reads the
// configuration from the environment, builds the transport, the idempotency
// store, the ledger and the Watermill router with its middleware, serves the
// HTTP API, and runs them until its context ends.
package app
