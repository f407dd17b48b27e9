package broker

import "github.com/ThreeDotsLabs/watermill/message"

// sharedPublisher is the one publisher of the HTTP API, the handlers and the
// poison queue. The router closes a handler's publisher when that handler
// stops, while others may still publish through it (sarama panics on a send
// after Close; watermill-sql's Close must not run during a Publish; closing
// the in-process pub/sub ends every subscription), so its Close does
// nothing: [Transport.Close] closes it, after the router has stopped.
type sharedPublisher struct{ message.Publisher }

// Close does nothing; see sharedPublisher.
func (sharedPublisher) Close() error { return nil }
