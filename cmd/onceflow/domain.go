package main

import (
	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/handlers/payments"
)

// service is the domain the binary runs: the one line a fork changes to
// run its own.
func service() domain.Domain { return payments.Domain() }
