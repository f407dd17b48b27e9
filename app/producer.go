package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/domain"
	"github.com/onceflow/onceflow/transport"
	"github.com/onceflow/onceflow/transport/broker"
)

// Producer publishes straight to the broker that TRANSPORT names, as
// another team's service would: a domain's commands send test traffic with
// it. Messages go to their topic after TOPIC_PREFIX, signed when
// MESSAGE_SIGNING_SECRETS is set, as a trusted producer signs them.
// Publish is safe for concurrent use.
type Producer struct {
	cfg  Config
	pool *pgxpool.Pool // the sql transport's; nil for the others
	t    *broker.Transport
	pub  message.Publisher // t's, signing
}

var _ domain.Producer = (*Producer)(nil)

// OpenProducer connects to the broker cfg names; on Kafka it creates
// topics first.
func OpenProducer(ctx context.Context, cfg Config, topics []string) (*Producer, error) {
	p := &Producer{cfg: cfg}
	signer, err := cfg.signer()
	if err != nil {
		return nil, err
	}
	if cfg.Transport == "sql" {
		if p.pool, err = openPostgres(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns); err != nil {
			return nil, err
		}
	}
	t, err := openTransport(ctx, cfg, p.pool, topics, slog.New(slog.DiscardHandler))
	if err != nil {
		p.Close()
		return nil, err
	}
	p.t, p.pub = t, signer.Publisher(t.Publisher())
	return p, nil
}

// Publish publishes msgs to topic.
func (p *Producer) Publish(topic string, msgs ...*message.Message) error {
	return p.pub.Publish(topic, msgs...)
}

// Topic is topic as the broker names it: after TOPIC_PREFIX.
func (p *Producer) Topic(topic string) string { return p.cfg.TopicPrefix + topic }

// String names the transport: "kafka", say.
func (p *Producer) String() string { return p.cfg.Transport }

// Close disconnects from the broker.
func (p *Producer) Close() error {
	var err error
	if p.t != nil {
		err = p.t.Close()
	}
	if p.pool != nil {
		p.pool.Close()
	}
	return err
}

// ServiceURL is the base URL at which a client on this host reaches the
// service listening on HTTP_ADDR: ":8080" is http://127.0.0.1:8080.
func (c Config) ServiceURL() (string, error) { return localURL("HTTP_ADDR", c.HTTPAddr) }

// InternalURL is the base URL at which a client on this host reaches the
// service's /readyz, /metrics and key admin: INTERNAL_ADDR's when it is
// set, else HTTP_ADDR's.
func (c Config) InternalURL() (string, error) {
	if c.InternalAddr == "" {
		return c.ServiceURL()
	}
	return localURL("INTERNAL_ADDR", c.InternalAddr)
}

// localURL is the base URL of the listening address addr, the value of
// the variable name, from this host.
func localURL(name, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%s=%q: %w", name, addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// CommandEnv is the environment of a domain's command run by the binary:
// its arguments and streams, and the service's settings read from environ.
func CommandEnv(args, environ []string, stdout, stderr io.Writer) domain.CommandEnv {
	return domain.CommandEnv{
		Args: args, Environ: environ, Stdout: stdout, Stderr: stderr,
		Settings: commandSettings, Transports: slices.Clone(transport.Kinds),
	}
}

// commandSettings is the service's settings in environ, as a domain's
// command sees them.
func commandSettings(environ []string) (domain.Settings, error) {
	cfg, err := LoadConfig(environ)
	if err != nil {
		return domain.Settings{}, err
	}
	url, err := cfg.ServiceURL()
	if err != nil {
		return domain.Settings{}, err
	}
	keys, err := cfg.apiKeys()
	if err != nil {
		return domain.Settings{}, err
	}
	var client string
	if keys != nil && cfg.PublishAPIKey != "" {
		client, _ = keys.Client(cfg.PublishAPIKey)
	}
	return domain.Settings{
		Transport: cfg.Transport, URL: url, APIKey: cfg.PublishAPIKey, Client: client,
		OpenProducer: func(ctx context.Context, topics []string) (domain.Producer, error) {
			return OpenProducer(ctx, cfg, topics)
		},
	}, nil
}
