package broker

import (
	"fmt"
	"time"
)

// URLError is a broker's URL that does not parse. Its message leaves the
// URL out: it may hold a password.
type URLError struct {
	// What the URL should have been, with its article: "an AMQP URI".
	What string
	Err  error
}

func (e *URLError) Error() string { return "not " + e.What + ": " + e.Err.Error() }
func (e *URLError) Unwrap() error { return e.Err }

// ConnectError is a first connection to Broker (its product's name:
// "RabbitMQ") that did not succeed within Timeout, which the transport
// kept retrying it for; Err is the last attempt's error.
type ConnectError struct {
	Broker  string
	Timeout time.Duration
	Err     error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("no connection to %s within %v: %v", e.Broker, e.Timeout, e.Err)
}
func (e *ConnectError) Unwrap() error { return e.Err }
