//go:build !faults

package main

import "github.com/onceflow/onceflow/domain"

// withFaults returns d: the handler faults of the fault suite exist only in
// a build with the faults tag.
func withFaults(d domain.Domain, _ []string) (domain.Domain, error) { return d, nil }
