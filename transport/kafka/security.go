package kafka

import (
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"slices"
	"strings"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// The SASL mechanisms [SASL.Mechanism] names, as Kafka spells them.
const (
	SASLPlain       = "PLAIN"
	SASLSCRAMSHA256 = "SCRAM-SHA-256"
	SASLSCRAMSHA512 = "SCRAM-SHA-512"
)

// SASLMechanisms lists the mechanisms [SASL] supports.
var SASLMechanisms = []string{SASLPlain, SASLSCRAMSHA256, SASLSCRAMSHA512}

// SASL authenticates every Kafka client of the transport (publisher,
// subscribers, the start-up admin and the readiness check). The zero value
// authenticates none. PLAIN sends the password as it is: use it over TLS
// only.
type SASL struct {
	// Mechanism is one of [SASLMechanisms], or "" for no SASL.
	Mechanism string
	// User and Password are the credentials; both required with a
	// mechanism.
	User, Password string
}

// validate checks that s names a supported mechanism with credentials.
func (s SASL) validate() error {
	switch {
	case s.Mechanism == "":
		if s.User != "" || s.Password != "" {
			return fmt.Errorf("kafka: a SASL user or password without a mechanism: use one of %s", strings.Join(SASLMechanisms, ", "))
		}
		return nil
	case !slices.Contains(SASLMechanisms, s.Mechanism):
		return fmt.Errorf("kafka: SASL mechanism %q is not supported: use one of %s", s.Mechanism, strings.Join(SASLMechanisms, ", "))
	case s.User == "" || s.Password == "":
		return fmt.Errorf("kafka: SASL %s needs a user and a password", s.Mechanism)
	}
	return nil
}

// applySecurity sets sc's TLS and SASL from cfg: every client of the
// transport connects the same way.
func applySecurity(sc *sarama.Config, cfg Config) {
	if cfg.TLS != nil {
		sc.Net.TLS.Enable = true
		sc.Net.TLS.Config = cfg.TLS.Clone()
	}
	s := cfg.SASL
	if s.Mechanism == "" {
		return
	}
	sc.Net.SASL.Enable = true
	sc.Net.SASL.Handshake = true
	sc.Net.SASL.Version = sarama.SASLHandshakeV1
	sc.Net.SASL.Mechanism = sarama.SASLMechanism(s.Mechanism)
	sc.Net.SASL.User, sc.Net.SASL.Password = s.User, s.Password
	switch s.Mechanism {
	case SASLSCRAMSHA256:
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.HashGeneratorFcn(sha256.New)} }
	case SASLSCRAMSHA512:
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.HashGeneratorFcn(sha512.New)} }
	}
}

// scramClient is sarama's SCRAM client on xdg-go/scram: one conversation
// per connection.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

// Begin starts a conversation; the user name and password are prepared
// (SASLprep) as RFC 5802 requires.
func (c *scramClient) Begin(user, password, authzID string) error {
	client, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return fmt.Errorf("preparing the SCRAM credentials: %w", err)
	}
	c.conv = client.NewConversation()
	return nil
}

// Step answers the server's challenge (the first step, "").
func (c *scramClient) Step(challenge string) (string, error) { return c.conv.Step(challenge) }

// Done reports whether the conversation ended, the server verified.
func (c *scramClient) Done() bool { return c.conv.Done() }

var _ sarama.SCRAMClient = (*scramClient)(nil)
