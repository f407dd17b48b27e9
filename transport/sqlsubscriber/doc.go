// Package sqlsubscriber builds watermill-sql subscribers on PostgreSQL as
// the service reads with them: the sql transport's, and the outbox
// relay's, which reads the outbox table whatever the broker. [New] tunes
// a subscriber ([Config]: its consumer group and pace), and
// [OpenConsumerPool] opens the pool of their own the subscribers hold
// their connections on.
package sqlsubscriber
