//go:build faults

package main

import (
	"github.com/onceflow/onceflow/app/apptest/faults"
	"github.com/onceflow/onceflow/domain"
)

// withFaults puts the handler faults that CHAOS_* in environ switch on
// around every route of d: the fault suite's build (go build -tags faults).
func withFaults(d domain.Domain, environ []string) (domain.Domain, error) {
	c, err := faults.FromEnv(environ)
	if err != nil {
		return domain.Domain{}, err
	}
	return faults.Wrap(d, c), nil
}
