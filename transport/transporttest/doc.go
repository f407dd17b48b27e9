// Package transporttest is what the broker packages' tests share: the
// checks every broker transport passes whatever the broker (CheckInFlight,
// CheckCloseHandsBack, ...), Watermill's own Pub/Sub suite run on a
// transport as the service builds it ([RunPubSubSuite]), and the helpers
// they stand on. Each broker package's tests run them on topics of their
// own, against the broker of [brokerenv] or one of the test's own.
//
// [brokerenv]: https://pkg.go.dev/github.com/onceflow/onceflow/internal/testenv/brokerenv
package transporttest
