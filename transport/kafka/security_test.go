package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testenv"
	"github.com/onceflow/onceflow/internal/testenv/brokerenv"
	"github.com/onceflow/onceflow/transport/transporttest"
)

// The Kafka transport authenticates with each SASL mechanism, over TLS or
// not, on every connection it makes: start-up's admin (topics), the
// publisher, a consumer group and the readiness check. A wrong password,
// or no SASL at all, fails start-up without showing the password.
func TestKafkaSASLAndTLS(t *testing.T) {
	certs := testenv.TLS(t)
	for _, tc := range []struct {
		mechanism string
		tls       bool
	}{
		{SASLPlain, true},
		{SASLSCRAMSHA256, false},
		{SASLSCRAMSHA512, true},
	} {
		name := tc.mechanism
		if tc.tls {
			name += " over TLS"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const user, password = "svc-user", "kafka-pa55-word"
			var serverTLS, clientTLS *tls.Config
			if tc.tls {
				serverTLS, clientTLS = certs.Server, caTLS(t, certs.CAFile)
			}
			brokers := brokerenv.KafkaSecured(t, tc.mechanism, user, password, serverTLS)
			prefix, service := testenv.Names()
			cfg := Config{Brokers: brokers, Partitions: 1, TopicPrefix: prefix, ServiceName: service,
				KeyMetadata: transporttest.KeyMetadata, Topics: []string{topicRequested}, TLS: clientTLS,
				SASL: SASL{Mechanism: tc.mechanism, User: user, Password: password}}
			tr := newTestTransport(t, cfg)
			if err := tr.Readiness()(t.Context()); err != nil {
				t.Errorf("readiness: %v", err)
			}
			ch := transporttest.Subscribe(t, tr, "h", topicRequested)
			sent := transporttest.PublishN(t, tr, topicRequested, 3)
			for _, m := range transporttest.Receive(t, ch, len(sent)) {
				if sent[m.UUID] == nil {
					t.Errorf("received %s, not sent", m.UUID)
				}
			}

			for what, bad := range map[string]Config{
				"a wrong password": withSASL(cfg, SASL{Mechanism: tc.mechanism, User: user, Password: "wrong-pa55"}),
				"no SASL":          withSASL(cfg, SASL{}),
			} {
				start := time.Now()
				tr, err := New(t.Context(), bad)
				if err == nil {
					_ = tr.Close()
					t.Errorf("%s: New succeeded", what)
					continue
				}
				if strings.Contains(err.Error(), "pa55") {
					t.Errorf("%s: the error shows the password: %v", what, err)
				}
				t.Logf("%s: failed after %v: %v", what, time.Since(start).Round(time.Millisecond), err)
			}
		})
	}
}

// withSASL is cfg authenticating with s.
func withSASL(cfg Config, s SASL) Config {
	cfg.SASL = s
	return cfg
}

// caTLS trusts the CA in file alone.
func caTLS(t *testing.T, file string) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in " + file)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// TestKafkaSASLValidate: a mechanism needs credentials, credentials need a
// mechanism, and only the mechanisms sarama is given a client for are
// taken.
func TestKafkaSASLValidate(t *testing.T) {
	base := Config{Brokers: []string{"k:9092"}, ServiceName: "s"}
	for _, tc := range []struct {
		sasl SASL
		want string
	}{
		{SASL{}, ""},
		{SASL{Mechanism: SASLSCRAMSHA512, User: "u", Password: "p"}, ""},
		{SASL{Mechanism: SASLPlain, User: "u"}, "needs a user and a password"},
		{SASL{User: "u", Password: "p"}, "without a mechanism"},
		{SASL{Mechanism: "GSSAPI", User: "u", Password: "p"}, `"GSSAPI" is not supported`},
	} {
		err := withSASL(base, tc.sasl).Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.sasl, err, tc.want)
		}
	}
}
