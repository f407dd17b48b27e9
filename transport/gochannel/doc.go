// Package gochannel is the in-process transport: nothing to install,
// messages live in the process. Publish returns once every subscription
// of the topic acked the message (the transport's backpressure, see
// inProcess), and a message published to a topic nobody subscribes to is
// dropped. It is the service's default, so that it runs with nothing
// installed.
package gochannel
