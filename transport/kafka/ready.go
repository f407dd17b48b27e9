package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/IBM/sarama"

	"github.com/onceflow/onceflow/transport/broker"
)

// probe checks Kafka on a broker connection of its own, kept between
// checks: a check sends it an ApiVersions request. One check runs at a
// time; safe for concurrent use.
type probe struct {
	// config is the transport's: the probe connects as its clients do
	// (TLS, SASL), so that a broker that refuses their credentials is not
	// ready.
	config  Config
	brokers []string
	mu      sync.Mutex
	broker  *sarama.Broker // nil until the first check, and after a failed one
}

// ready is nil when a broker answers an ApiVersions request within ctx:
// the kept one, or else the first of brokers that does on a new
// connection, which is then kept.
func (p *probe) ready(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broker != nil {
		if _, err := p.broker.ApiVersions(&sarama.ApiVersionsRequest{}); err == nil {
			return nil
		}
		_ = p.broker.Close()
		p.broker = nil
	}
	cfg := baseConfig(sarama.NewConfig(), p.config)
	timeout := broker.UntilDeadline(ctx)
	cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = timeout, timeout, timeout
	var errs []error
	for _, addr := range p.brokers {
		b := sarama.NewBroker(addr)
		if err := b.Open(cfg); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := b.ApiVersions(&sarama.ApiVersionsRequest{}); err != nil {
			_ = b.Close()
			errs = append(errs, fmt.Errorf("broker %s: %w", addr, err))
			continue
		}
		p.broker = b
		return nil
	}
	return errors.Join(errs...)
}

// close closes the kept connection. Closing twice is harmless.
func (p *probe) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broker != nil {
		_ = p.broker.Close()
		p.broker = nil
	}
	return nil
}
