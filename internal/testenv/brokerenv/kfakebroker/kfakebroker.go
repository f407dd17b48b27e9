// Package kfakebroker starts kfake, franz-go's in-process Kafka-protocol
// broker, the way the tests and tools/cmd/devkafka use it: one broker, topics
// created on demand, and connections that outlive their clients so that
// consumer groups recover from crashed clients as they do on Kafka.
//
// kfake re-arms a group member's session timer only when a reply to it is
// handed to its connection. When a client dies while its JoinGroup is
// parked in a rebalance (a SIGKILLed replica), kfake notices the closed
// connection and, about half the time, drops the reply without re-arming
// the timer: the dead member stays in the group for good, is given
// partitions, and nobody consumes them (package brokerenv's
// TestKfakeKeepsMemberThatDiedInJoinGroup shows it). Kafka re-arms every
// member's timer when a join completes, so the dead member expires one
// session timeout later. Here kfake sees a client's connection end only
// Linger after the client went away, and its replies in between are
// discarded as delivered: each dead member then expires like on Kafka.
package kfakebroker

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Linger is how long kfake keeps a connection after its client went away.
// It exceeds any rebalance the service's consumer groups can be parked in.
const Linger = 5 * time.Minute

// NewCluster starts a one-broker cluster named clusterID that creates
// topics on demand and listens on addr (port 0 picks a free one), which it
// also advertises to clients. opts are applied after these.
func NewCluster(addr, clusterID string, opts ...kfake.Opt) (*kfake.Cluster, error) {
	return kfake.NewCluster(append([]kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ClusterID(clusterID),
		kfake.AllowAutoTopicCreation(),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			l, err := net.Listen(network, addr)
			if err != nil {
				return nil, err
			}
			return Wrap(l), nil
		}),
	}, opts...)...)
}

// Wrap returns l with its connections made to outlive their clients as
// the package describes. A caller that listens by itself (kfake.ListenFn,
// say, to put a listener of its own under kfake) wraps its listener in it.
func Wrap(l net.Listener) net.Listener { return lingerListener{l} }

// lingerListener accepts lingerConns.
type lingerListener struct{ net.Listener }

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lingerConn{Conn: c, gone: make(chan struct{}), closed: make(chan struct{})}, nil
}

// lingerConn is a client's connection as kfake sees it. Once the client's
// side fails, reads block for Linger (or until kfake closes the
// connection) and then report io.EOF, and writes succeed without sending.
type lingerConn struct {
	net.Conn
	goneOnce, closeOnce sync.Once
	gone, closed        chan struct{}
}

func (c *lingerConn) Read(p []byte) (int, error) {
	select {
	case <-c.gone:
		return c.linger()
	default:
	}
	n, err := c.Conn.Read(p)
	if err != nil {
		c.goneOnce.Do(func() { close(c.gone) })
		if n > 0 {
			return n, nil
		}
		return c.linger()
	}
	return n, nil
}

// linger waits until Linger has passed or kfake closed the connection.
func (c *lingerConn) linger() (int, error) {
	t := time.NewTimer(Linger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.closed:
	}
	return 0, io.EOF
}

func (c *lingerConn) Write(p []byte) (int, error) {
	select {
	case <-c.gone:
		return len(p), nil
	default:
	}
	if _, err := c.Conn.Write(p); err != nil {
		c.goneOnce.Do(func() { close(c.gone) })
	}
	return len(p), nil
}

func (c *lingerConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	if err := c.Conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
