// Package brokerenv gives integration tests the brokers they run against:
// RabbitMQ and NATS (shared servers, addresses from TEST_AMQP_URL and
// TEST_NATS_URL with loopback defaults), nats-servers of a test's own, and
// Kafka (an in-process kfake broker, see package kfakebroker, unless
// TEST_KAFKA_BROKERS names a real cluster); and [ServiceEnv], the settings
// of a service under test on any broker, in a namespace of the test's own.
//
// It stands apart from package testenv, whose skip-or-fail rules it
// follows (an unreachable broker skips the test, or fails it under
// REQUIRE_SERVICES=1), so that the tests of a package that needs no broker
// import no broker client.
package brokerenv
