// Package domain is the seam between the service and the business it runs.
//
// A business hands the service one [Domain]: its message routes (each with
// its topics, handler and, optionally, its own key function, fingerprint
// and timeout), its HTTP routes, the errors a redelivery can never fix, its
// own migrations and, optionally, subcommands of its own. The composition
// root (package app) loops over them: it subscribes every route on the
// configured broker behind the idempotent receiver, mounts the HTTP routes
// behind authentication and the Idempotency-Key face, migrates the
// domain's tables in a version table of their own, and labels metrics and
// the key admin with the routes' names. It knows nothing else of the
// domain, so replacing the example means replacing the directory that
// builds the Domain and the one line in cmd/onceflow that picks it.
package domain
