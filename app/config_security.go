package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/onceflow/onceflow/middleware/signing"
	"github.com/onceflow/onceflow/transport"
)

// validateSecurity checks the settings of the backends' TLS and
// authentication against each other: credentials and their mechanism come
// together, a CA file needs TLS, and a Redis URL and REDIS_* do not both
// say the same thing.
func (c Config) validateSecurity() error {
	var errs []error
	switch {
	case c.KafkaSASLMechanism != "none" && (c.KafkaUsername == "" || c.KafkaPassword == ""):
		errs = append(errs, fmt.Errorf("KAFKA_SASL_MECHANISM=%s needs KAFKA_USERNAME and KAFKA_PASSWORD", c.KafkaSASLMechanism))
	case c.KafkaSASLMechanism == "none" && (c.KafkaUsername != "" || c.KafkaPassword != ""):
		errs = append(errs, errors.New("KAFKA_USERNAME and KAFKA_PASSWORD need KAFKA_SASL_MECHANISM (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)"))
	}
	if c.KafkaTLSCAFile != "" && !c.KafkaTLS {
		errs = append(errs, errors.New("KAFKA_TLS_CA_FILE needs KAFKA_TLS=true"))
	}
	if len(c.RedisAddrs) == 0 && c.RedisURL != "" {
		u, err := url.Parse(c.RedisURL)
		if err != nil {
			return fmt.Errorf("REDIS_URL=%s is not a URL", redact(c.RedisURL))
		}
		tlsURL := u.Scheme == "rediss"
		_, hasPassword := u.User.Password()
		switch {
		case c.RedisTLS && !tlsURL:
			errs = append(errs, fmt.Errorf("REDIS_TLS=true with REDIS_URL=%s: a single node's TLS is its URL's scheme, use rediss://", redact(c.RedisURL)))
		case c.RedisTLSCAFile != "" && !tlsURL:
			errs = append(errs, fmt.Errorf("REDIS_TLS_CA_FILE with REDIS_URL=%s: use rediss:// to connect over TLS", redact(c.RedisURL)))
		}
		if hasPassword && c.RedisPassword != "" {
			errs = append(errs, errors.New("REDIS_PASSWORD and a password in REDIS_URL: set one of them"))
		}
		if u.User.Username() != "" && c.RedisUsername != "" {
			errs = append(errs, errors.New("REDIS_USERNAME and a user in REDIS_URL: set one of them"))
		}
	} else if c.RedisTLSCAFile != "" && !c.RedisTLS {
		errs = append(errs, errors.New("REDIS_TLS_CA_FILE needs REDIS_TLS=true with REDIS_ADDRS"))
	}
	return errors.Join(errs...)
}

// validateSigning checks MESSAGE_SIGNING_MAX_AGE against DEDUP_TTL, and
// the secrets of MESSAGE_SIGNING_SECRETS. Its errors never show a secret.
func (c Config) validateSigning() error {
	switch age := c.MessageSigningMaxAge; {
	case age < 0:
		return fmt.Errorf("MESSAGE_SIGNING_MAX_AGE=%v must be a positive duration up to DEDUP_TTL=%v, such as 15m, or 0 for DEDUP_TTL", age, c.DedupTTL)
	case age > c.DedupTTL:
		return fmt.Errorf("MESSAGE_SIGNING_MAX_AGE=%v must be at most DEDUP_TTL=%v: a copy of a message older than the dedup window would run again (raise DEDUP_TTL with it)", age, c.DedupTTL)
	}
	_, err := c.signer()
	return err
}

// signingMaxAge is MESSAGE_SIGNING_MAX_AGE, or DEDUP_TTL when it is 0.
func (c Config) signingMaxAge() time.Duration {
	if c.MessageSigningMaxAge == 0 {
		return c.DedupTTL
	}
	return c.MessageSigningMaxAge
}

// signer is the signer of MESSAGE_SIGNING_SECRETS, or nil when it is
// unset: it signs and verifies each message for its topic after
// TOPIC_PREFIX, the topic on the broker, on every path the service
// publishes and consumes by (the transports prepend the prefix below the
// signer, and the router names topics without it), for
// MESSAGE_SIGNING_MAX_AGE. Its error never shows a secret.
func (c Config) signer() (*signing.Signer, error) {
	if strings.TrimSpace(c.MessageSigningSecrets) == "" {
		return nil, nil
	}
	var secrets [][]byte
	for _, secret := range strings.Split(c.MessageSigningSecrets, ",") {
		secrets = append(secrets, []byte(strings.TrimSpace(secret)))
	}
	s, err := signing.NewSigner(signing.Config{Secrets: secrets, MaxAge: c.signingMaxAge(), TopicPrefix: c.TopicPrefix})
	if err != nil {
		return nil, fmt.Errorf("MESSAGE_SIGNING_SECRETS: %w", err)
	}
	return s, nil
}

// tlsConfig is the TLS configuration of a client that verifies servers
// against the certificate authorities in the PEM file caFile, read from
// the setting name, or against the system's roots when caFile is "".
func tlsConfig(name, caFile string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return tc, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	tc.RootCAs = x509.NewCertPool()
	if !tc.RootCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s=%s holds no PEM certificate", name, caFile)
	}
	return tc, nil
}

// secureTransport adds to tc the credentials and TLS of its broker: Kafka's
// SASL and TLS from KAFKA_*; and when the redisstream transport runs on
// REDIS_URL, the store's Redis, that Redis's REDIS_USERNAME, REDIS_PASSWORD
// and REDIS_TLS_CA_FILE (a REDIS_STREAM_URL carries its own in its URL).
func (c Config) secureTransport(tc *transport.Config) (err error) {
	if c.KafkaSASLMechanism != "none" {
		tc.KafkaSASL = transport.KafkaSASL{Mechanism: c.KafkaSASLMechanism, User: c.KafkaUsername, Password: c.KafkaPassword}
	}
	if c.KafkaTLS {
		if tc.KafkaTLS, err = tlsConfig("KAFKA_TLS_CA_FILE", c.KafkaTLSCAFile); err != nil {
			return err
		}
	}
	if name, _ := c.redisStream(); name == "REDIS_URL" {
		tc.RedisStreamUsername, tc.RedisStreamPassword = c.RedisUsername, c.RedisPassword
		if c.RedisTLSCAFile != "" {
			if tc.RedisStreamTLS, err = tlsConfig("REDIS_TLS_CA_FILE", c.RedisTLSCAFile); err != nil {
				return err
			}
		}
	}
	return nil
}

// redisNodeOptions are the client options of the single Redis node at
// REDIS_URL: its URL's, with REDIS_USERNAME and REDIS_PASSWORD where the
// URL has none and, over TLS (rediss://), REDIS_TLS_CA_FILE's roots. Its
// error leaves the URL out: it may hold a password.
func (c Config) redisNodeOptions() (*redis.Options, error) {
	opts, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		var uerr *url.Error // its message would repeat the URL, password included
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("REDIS_URL=%s: %w", redact(c.RedisURL), err)
	}
	if opts.Username == "" {
		opts.Username = c.RedisUsername
	}
	if opts.Password == "" {
		opts.Password = c.RedisPassword
	}
	if opts.TLSConfig != nil && c.RedisTLSCAFile != "" {
		tc, err := tlsConfig("REDIS_TLS_CA_FILE", c.RedisTLSCAFile)
		if err != nil {
			return nil, err
		}
		tc.ServerName = opts.TLSConfig.ServerName // the URL's host
		opts.TLSConfig = tc
	}
	return opts, nil
}

// redisClusterOptions are the client options of the Redis Cluster at
// REDIS_ADDRS, with REDIS_USERNAME, REDIS_PASSWORD and, with REDIS_TLS,
// TLS on REDIS_TLS_CA_FILE's roots or the system's.
func (c Config) redisClusterOptions() (*redis.ClusterOptions, error) {
	opts := &redis.ClusterOptions{Addrs: c.RedisAddrs, Username: c.RedisUsername, Password: c.RedisPassword}
	if c.RedisTLS {
		tc, err := tlsConfig("REDIS_TLS_CA_FILE", c.RedisTLSCAFile)
		if err != nil {
			return nil, err
		}
		opts.TLSConfig = tc
	}
	return opts, nil
}
