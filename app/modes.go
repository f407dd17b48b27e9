package app

import (
	"fmt"

	"github.com/onceflow/onceflow/domain"
)

// mode is the mode route r runs in: its own (domain.Route.Mode), or
// DEDUP_MODE.
func (c Config) mode(r domain.Route) domain.Mode {
	if r.Mode != "" {
		return r.Mode
	}
	return domain.Mode(c.DedupMode)
}

// inTransaction reports whether anything runs in transaction mode: the
// HTTP face (DEDUP_MODE) or one of routes.
func (c Config) inTransaction(routes domain.Routes) bool {
	if c.DedupMode == string(domain.ModeTransaction) {
		return true
	}
	for _, r := range routes {
		if c.mode(r) == domain.ModeTransaction {
			return true
		}
	}
	return false
}

// modes lists the modes the service runs in: DEDUP_MODE, then the other
// when a route chooses it.
func (c Config) modes(routes domain.Routes) []domain.Mode {
	modes := []domain.Mode{domain.Mode(c.DedupMode)}
	for _, r := range routes {
		if m := c.mode(r); m != modes[0] {
			return append(modes, m)
		}
	}
	return modes
}

// checkRouteMode reports a route in transaction mode where the service
// cannot run one, as the configuration's check does for DEDUP_MODE.
func (c Config) checkRouteMode(r domain.Route) error {
	if r.Mode != domain.ModeTransaction || c.DedupMode == string(domain.ModeTransaction) {
		return nil // DEDUP_MODE's own check covers it
	}
	if c.Store != "postgres" {
		return fmt.Errorf("route %q: Mode transaction requires STORE=postgres (STORE=%q): leave its Mode empty, or lease, with other stores", r.Name, c.Store)
	}
	if c.PGRecordsLayout == "partitioned" && c.Transport == "sql" {
		return fmt.Errorf("route %q: Mode transaction is not supported with PG_RECORDS_LAYOUT=partitioned and TRANSPORT=sql (the claim's snapshot must follow its key's lock): use PG_RECORDS_LAYOUT=rows, Mode lease or another transport", r.Name)
	}
	return nil
}
