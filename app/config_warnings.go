package app

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/onceflow/onceflow/transport"
)

// Warnings lists what c leaves open that a production deployment closes,
// one line each, naming the setting and what to set instead; start-up
// logs each as a warning beside the effective configuration. None of it
// stops start-up: each is right somewhere (a private network, a sidecar
// that encrypts), so the service says what it sees and leaves the choice.
// In order:
//
//   - DATABASE_URL with sslmode disable, allow or prefer, or none (which
//     is prefer, unless PGSSLMODE sets one): TLS is then optional and the
//     server's certificate never verified;
//   - a broker (any TRANSPORT but gochannel) without
//     MESSAGE_SIGNING_SECRETS: whoever may publish may take keys;
//   - INTERNAL_ADDR unset while the key admin (ADMIN_API_KEYS) or, with
//     API_KEYS guarding the API, /metrics and the probes are served on a
//     HTTP_ADDR other than loopback;
//   - each Redis, RabbitMQ, NATS or Kafka the service opens without
//     credentials or without TLS.
//
// A backend on loopback (localhost, 127.0.0.0/8, ::1, a Unix socket) is
// not warned of: the network it would cross is the host's. Warnings never
// show a credential, host or URL.
func (c Config) Warnings() []string {
	var ws []string
	add := func(w string) {
		if w != "" {
			ws = append(ws, w)
		}
	}
	if c.opens("postgres") {
		add(postgresTLSWarning(c.DatabaseURL))
	}
	if c.Transport != transport.GoChannel && strings.TrimSpace(c.MessageSigningSecrets) == "" {
		add(fmt.Sprintf("MESSAGE_SIGNING_SECRETS is unset with TRANSPORT=%s: whoever may publish to a topic a handler consumes "+
			"may take an idempotency key before the real message does; set it (at least 32 random characters, from a secret) "+
			"and sign at every producer (docs/security.md, the producer trust boundary)", c.Transport))
	}
	add(c.internalAddrWarning())
	if c.opens("redis") {
		add(c.redisWarning())
	}
	switch c.Transport {
	case transport.RedisStream:
		if c.RedisStreamURL != "" {
			add(urlWarning("REDIS_STREAM_URL", c.RedisStreamURL, "rediss", "", "use rediss:// with a user and password of the service's own"))
		}
	case transport.AMQP:
		add(urlWarning("AMQP_URL", c.AMQPURL, "amqps", "guest", "use amqps:// with a user of the service's own"))
	case transport.NATS:
		add(natsWarning(c.NATSURL))
	case transport.Kafka:
		add(c.kafkaWarning())
	}
	return ws
}

// internalAddrWarning warns of the operations routes on the API's
// address: the key admin whenever it exists, /metrics and the probes
// when API_KEYS says the API is not open to all (with ALLOW_ANONYMOUS the
// API is, and start-up warns of that already).
func (c Config) internalAddrWarning() string {
	if c.InternalAddr != "" || listensOnLoopback(c.HTTPAddr) {
		return ""
	}
	switch {
	case c.AdminAPIKey != "" || strings.TrimSpace(c.AdminAPIKeys) != "":
		return fmt.Sprintf("INTERNAL_ADDR is unset: the key admin (/admin/), /metrics and the probes are served on HTTP_ADDR=%s, "+
			"beside the API, to whoever reaches it; set INTERNAL_ADDR (such as :9090) to a port only operators and the scraper reach", c.HTTPAddr)
	case strings.TrimSpace(c.APIKeys) != "":
		return fmt.Sprintf("INTERNAL_ADDR is unset: /metrics, /healthz and /readyz are served without a key on HTTP_ADDR=%s, beside the API; "+
			"set INTERNAL_ADDR (such as :9090) to a port only the scraper and the probes reach", c.HTTPAddr)
	}
	return ""
}

// postgresTLSWarning warns of a DATABASE_URL, URL or key=value form,
// whose sslmode does not require TLS. One that does not parse is left to
// start-up, which refuses it.
func postgresTLSWarning(dsn string) string {
	mode, hosts, ok := postgresSettings(dsn)
	if !ok || allLocal(hosts) {
		return ""
	}
	const fix = "set sslmode=verify-full (with sslrootcert for a private CA)"
	switch mode {
	case "":
		return "DATABASE_URL sets no sslmode, so it is prefer (unless PGSSLMODE sets one): TLS only when the server offers it, " +
			"and its certificate never verified; " + fix
	case "disable":
		return "DATABASE_URL has sslmode=disable: every connection to PostgreSQL, password and records included, is in clear; " + fix
	case "allow", "prefer":
		return "DATABASE_URL has sslmode=" + mode + ": TLS only when the server offers it, and its certificate never verified, " +
			"so a man in the middle goes unnoticed; " + fix
	}
	return ""
}

// pgKeyword matches one keyword=value of a key=value connection string;
// the value may be quoted.
var pgKeyword = regexp.MustCompile(`([a-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)`)

// postgresSettings reads the sslmode and hosts of a PostgreSQL
// connection string; ok is false when it does not parse.
func postgresSettings(dsn string) (mode string, hosts []string, ok bool) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", nil, false
		}
		q := u.Query()
		for _, hp := range strings.Split(u.Host, ",") {
			hosts = append(hosts, hostOf(hp))
		}
		if h := q.Get("host"); h != "" {
			hosts = strings.Split(h, ",")
		}
		return q.Get("sslmode"), hosts, true
	}
	for _, m := range pgKeyword.FindAllStringSubmatch(dsn, -1) {
		v := strings.Trim(m[2], "'")
		switch m[1] {
		case "sslmode":
			mode = v
		case "host":
			hosts = strings.Split(v, ",")
		}
	}
	return mode, hosts, true
}

// redisWarning warns of the store's Redis (REDIS_ADDRS, or REDIS_URL with
// REDIS_USERNAME and REDIS_PASSWORD) without a password or TLS.
func (c Config) redisWarning() string {
	const fix = "use rediss:// (REDIS_TLS=true for REDIS_ADDRS) and a password (REDIS_PASSWORD, or an ACL user)"
	if len(c.RedisAddrs) > 0 {
		hosts := make([]string, len(c.RedisAddrs))
		for i, a := range c.RedisAddrs {
			hosts[i] = hostOf(a)
		}
		if allLocal(hosts) {
			return ""
		}
		return missingWarning("REDIS_ADDRS", c.RedisPassword != "", c.RedisTLS, fix)
	}
	u, err := url.Parse(c.RedisURL)
	if err != nil || isLocal(u.Hostname()) {
		return ""
	}
	_, hasPassword := u.User.Password()
	return missingWarning("REDIS_URL", hasPassword || c.RedisPassword != "", u.Scheme == "rediss", fix)
}

// urlWarning warns of the broker at raw, whose TLS is its scheme
// tlsScheme, when it holds no user and password, or only the broker's
// default user defaultUser.
func urlWarning(name, raw, tlsScheme, defaultUser, fix string) string {
	u, err := url.Parse(raw)
	if err != nil || isLocal(u.Hostname()) {
		return ""
	}
	_, hasPassword := u.User.Password()
	auth := hasPassword && u.User.Username() != "" && u.User.Username() != defaultUser
	return missingWarning(name, auth, u.Scheme == tlsScheme, fix)
}

// natsWarning warns of NATS_URL, a comma-separated list of servers, when
// one of them has no credentials (user and password, or a token as its
// user) or no tls:// scheme.
func natsWarning(raw string) string {
	auth, tls, local := true, true, true
	for _, s := range strings.Split(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil {
			return ""
		}
		local = local && isLocal(u.Hostname())
		auth = auth && u.User != nil && u.User.Username() != ""
		tls = tls && u.Scheme == "tls"
	}
	if local {
		return ""
	}
	return missingWarning("NATS_URL", auth, tls, "use tls:// with a user and password (or a token) of the service's own")
}

// kafkaWarning warns of Kafka without SASL or TLS. KAFKA_SASL_MECHANISM=PLAIN
// without TLS has a warning of its own where the transport connects.
func (c Config) kafkaWarning() string {
	hosts := make([]string, len(c.KafkaBrokers))
	for i, b := range c.KafkaBrokers {
		hosts[i] = hostOf(b)
	}
	if allLocal(hosts) {
		return ""
	}
	sasl := c.KafkaSASLMechanism != "none"
	return missingWarning("KAFKA_BROKERS", sasl, c.KafkaTLS || c.KafkaSASLMechanism == "PLAIN",
		"set KAFKA_SASL_MECHANISM=SCRAM-SHA-512 with KAFKA_USERNAME and KAFKA_PASSWORD, and KAFKA_TLS=true")
}

// missingWarning is the warning of the backend of setting name when it
// lacks authentication or TLS, "" when it has both.
func missingWarning(name string, auth, tls bool, fix string) string {
	var missing []string
	if !auth {
		missing = append(missing, "no credentials")
	}
	if !tls {
		missing = append(missing, "no TLS")
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %s: whoever reaches its network can read or change what the service keeps and sends there; %s",
		name, strings.Join(missing, " and "), fix)
}

// listensOnLoopback reports whether the listening address addr takes
// connections from this host only.
func listensOnLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && host != "" && isLocal(host)
}

// hostOf is the host of host:port, or hostport itself without a port.
func hostOf(hostport string) string {
	if h, _, err := net.SplitHostPort(strings.TrimSpace(hostport)); err == nil {
		return h
	}
	return strings.TrimSpace(hostport)
}

// allLocal reports whether every host is local; none is the client's
// default, a local one.
func allLocal(hosts []string) bool {
	for _, h := range hosts {
		if !isLocal(h) {
			return false
		}
	}
	return true
}

// isLocal reports whether a backend's host is this host: none (the
// client's default), localhost, a loopback address or a Unix socket's
// directory.
func isLocal(host string) bool {
	host = strings.Trim(host, "[]")
	if host == "" || host == "localhost" || strings.HasPrefix(host, "/") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
