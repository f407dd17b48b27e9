package chaos

import (
	"fmt"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/onceflow/onceflow/internal/testenv/brokerenv/kfakebroker"
)

// Kafka is an in-process Kafka-protocol broker (kfake, started as
// internal/testenv/brokerenv/kfakebroker starts it) that the instances,
// separate processes, reach over TCP, behind a PausableListener: kfake
// keeps no data on disk, so a broker restart is played by cutting every
// connection and refusing new ones for the outage while the broker keeps
// its topics, offsets and groups — a restart with its data on disk.
type Kafka struct {
	cluster *kfake.Cluster

	mu        sync.Mutex
	listeners []*PausableListener
}

// StartKafka starts the broker on a free loopback port.
func StartKafka() (*Kafka, error) {
	k := &Kafka{}
	// kfakebroker's broker (dead group members expire as on Kafka), with
	// a PausableListener under its connections.
	c, err := kfakebroker.NewCluster("127.0.0.1:0", "onceflow-chaos",
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			l, err := net.Listen(network, address)
			if err != nil {
				return nil, err
			}
			p := NewPausableListener(l)
			k.mu.Lock()
			k.listeners = append(k.listeners, p)
			k.mu.Unlock()
			return kfakebroker.Wrap(p), nil
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("starting the in-process Kafka broker: %w", err)
	}
	k.cluster = c
	return k, nil
}

// Brokers are the bootstrap addresses.
func (k *Kafka) Brokers() []string { return k.cluster.ListenAddrs() }

// Pause cuts the broker off: see Kafka.
func (k *Kafka) Pause() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, l := range k.listeners {
		l.Pause()
	}
}

// Resume lets clients reconnect.
func (k *Kafka) Resume() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, l := range k.listeners {
		l.Resume()
	}
}

// Close stops the broker.
func (k *Kafka) Close() { k.cluster.Close() }
