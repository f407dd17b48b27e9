// Package broker is what the broker packages below transport share: the
// [Transport] each of them returns (one publisher, a subscriber per
// handler, a readiness check and Close) with its topic prefix applied and
// its publisher shared, the [Names] of the consumer groups, queues and
// streams a service creates, the lanes that let a one-message-at-a-time
// adapter hold several in flight ([Lanes]), the registry a transport
// closes its subscribers with ([Subscribers]), and the errors a caller
// inspects to name the setting behind them ([URLError], [ConnectError]).
//
// It imports no broker client: a broker package brings its own.
package broker
