package app

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/onceflow/onceflow/transport"
)

// Config is the service's whole configuration, read once from the
// environment by LoadConfig. Every field has a default that runs the service
// with nothing installed: in-process transport, memory store.
//
// Each field declares one setting, once: its env tag names the variable,
// envDefault gives its default, allowed (values separated by |) lists the
// only values it takes (or runtimeAllowed does, for a list the build
// decides), and secret says what the effective configuration's
// log line shows of it: url (the URL, its credentials masked by redact),
// apikeys (names, not keys) or true (only whether it is set). Its doc
// comment is its documentation: docs/configuration.md is generated from
// this file (go generate ./app). Validate derives the allowed values'
// checks from the tags, LogValue logs every field; rules that bind one
// setting to another are Validate's code.
//
//go:generate go test -run ^TestConfigurationDoc$ -update .
type Config struct {
	// Transport is the broker, one of those the build has: gochannel, in
	// process, needs nothing installed; docs/brokers.md describes the
	// others and the settings each reads.
	Transport string `env:"TRANSPORT" envDefault:"gochannel"`
	// Store keeps idempotency records: memory, redis (Redis 7.0 or later,
	// checked at start-up) or postgres.
	Store string `env:"STORE" envDefault:"memory" allowed:"memory|redis|postgres"`

	// DatabaseURL is PostgreSQL: the postgres store, the sql transport and
	// the shared ledger (when set, the ledger lives there). Its sslmode
	// (with sslrootcert) sets TLS for every connection: verify-full in
	// production; the default, prefer, verifies nothing.
	DatabaseURL string `env:"DATABASE_URL" secret:"url"`
	// MigrateOnStart makes start-up apply the pending migrations of
	// DATABASE_URL's schema (safe from every replica at once: they take
	// turns under a lock). false: start-up only checks that none is
	// pending, and refuses to start naming `onceflow migrate up`, for
	// deployments that migrate as a step of their own.
	MigrateOnStart bool `env:"MIGRATE_ON_START" envDefault:"true"`
	// DatabaseMaxConns sizes the PostgreSQL pool of the store, the ledger
	// and the sql transport's publisher (its subscribers have their own).
	DatabaseMaxConns int32 `env:"DATABASE_MAX_CONNS" envDefault:"20"`
	// RedisURL is a single Redis node, e.g. redis://127.0.0.1:6379/0.
	RedisURL string `env:"REDIS_URL" secret:"url"`
	// RedisAddrs, comma separated, selects a Redis Cluster instead.
	RedisAddrs []string `env:"REDIS_ADDRS" envSeparator:","`
	// RedisUsername is the user (a Redis ACL user) of the Redis at
	// REDIS_ADDRS, or at REDIS_URL when its URL names none.
	RedisUsername string `env:"REDIS_USERNAME"`
	// RedisPassword is the password of the Redis at REDIS_ADDRS, or at
	// REDIS_URL when its URL holds none: it keeps the password out of a
	// URL that a deploy file holds in clear. Set in both, it is refused.
	RedisPassword string `env:"REDIS_PASSWORD" secret:"true"`
	// RedisTLS connects to REDIS_ADDRS over TLS, verifying the nodes'
	// certificates. A single node takes TLS from its URL's scheme,
	// rediss://; REDIS_TLS=true with a redis:// REDIS_URL is refused.
	RedisTLS bool `env:"REDIS_TLS" envDefault:"false"`
	// RedisTLSCAFile is a PEM file of the certificate authorities that
	// sign the certificates of the Redis at REDIS_ADDRS or a rediss://
	// REDIS_URL, trusted instead of the system's roots.
	RedisTLSCAFile string `env:"REDIS_TLS_CA_FILE"`
	// RedisKeyPrefix is prepended to the key of every record the redis
	// store keeps. Unset, it is TOPIC_PREFIX + SERVICE_NAME + ":idem:"
	// (onceflow:idem: with the defaults), so that services and
	// environments sharing a Redis keep their records apart as they keep
	// their topics apart, and one never answers another's keys as
	// duplicates. Records written under another prefix are not seen:
	// set it to that prefix to keep them (before this setting, always
	// onceflow:idem:). It may not hold "{", a Redis Cluster hash tag.
	RedisKeyPrefix string `env:"REDIS_KEY_PREFIX"`
	// RedisRequireDurable refuses to start when the Redis store's settings
	// let it forget records (no append-only file, or an eviction policy
	// other than noeviction). Otherwise that is one warning at start-up.
	// Settings that cannot be read (CONFIG disabled) never refuse.
	RedisRequireDurable bool `env:"REDIS_REQUIRE_DURABLE" envDefault:"false"`
	// RedisWaitReplicas, when positive, makes every Complete return only
	// once that many replicas acknowledged the record (WAIT, pipelined
	// with the script), so that a failover keeps it. 0 does not wait.
	RedisWaitReplicas int `env:"REDIS_WAIT_REPLICAS" envDefault:"0"`
	// RedisWaitTimeout bounds that wait; too few acknowledgements within it
	// are a store error, and DEDUP_ON_STORE_ERROR applies.
	RedisWaitTimeout time.Duration `env:"REDIS_WAIT_TIMEOUT" envDefault:"1s"`
	// StoreBatchSize caps how many concurrent Claims (and Completes) the
	// redis and postgres stores send in one round trip: one script (a
	// pipeline on a Cluster), or one statement over arrays. A call waits
	// for a batch only while earlier batches are in flight, and never more
	// than the store's batch timeout (redis 500µs, postgres 5ms) before its
	// batch is sent. 0 or 1 turns batching off; the postgres store never
	// batches in DEDUP_MODE=transaction.
	StoreBatchSize int `env:"STORE_BATCH_SIZE" envDefault:"64"`
	// PGRecordsLayout is the layout of the PostgreSQL records table: rows
	// (expired rows deleted in batches) or partitioned (partitions by
	// created_at, dropped whole once expired). It is chosen when the
	// migrations first create the table; a later mismatch refuses to start.
	PGRecordsLayout string `env:"PG_RECORDS_LAYOUT" envDefault:"rows" allowed:"rows|partitioned"`
	// PGPartitionWidth is the range of created_at of each partition the
	// partitioned layout creates.
	PGPartitionWidth time.Duration `env:"PG_PARTITION_WIDTH" envDefault:"1h"`
	// KafkaBrokers are the Kafka seed brokers, comma separated host:port.
	KafkaBrokers []string `env:"KAFKA_BROKERS" envSeparator:","`
	// KafkaPartitions is the partition count of topics the service creates.
	KafkaPartitions int `env:"KAFKA_PARTITIONS" envDefault:"4"`
	// KafkaSASLMechanism authenticates every connection to Kafka with
	// KAFKA_USERNAME and KAFKA_PASSWORD: none, PLAIN (which sends the
	// password as it is, so start-up warns without KAFKA_TLS),
	// SCRAM-SHA-256 or SCRAM-SHA-512.
	KafkaSASLMechanism string `env:"KAFKA_SASL_MECHANISM" envDefault:"none" allowed:"none|PLAIN|SCRAM-SHA-256|SCRAM-SHA-512"`
	// KafkaUsername is the SASL user; required with a mechanism.
	KafkaUsername string `env:"KAFKA_USERNAME"`
	// KafkaPassword is the SASL password; required with a mechanism.
	KafkaPassword string `env:"KAFKA_PASSWORD" secret:"true"`
	// KafkaTLS connects to the brokers over TLS, verifying their
	// certificates against the system's roots or KAFKA_TLS_CA_FILE.
	KafkaTLS bool `env:"KAFKA_TLS" envDefault:"false"`
	// KafkaTLSCAFile is a PEM file of the certificate authorities that
	// sign the brokers' certificates, trusted instead of the system's
	// roots; it needs KAFKA_TLS=true.
	KafkaTLSCAFile string `env:"KAFKA_TLS_CA_FILE"`
	// AMQPURL is RabbitMQ, e.g. amqp://guest:guest@127.0.0.1:5672/.
	AMQPURL string `env:"AMQP_URL" secret:"url"`
	// AMQPConnectTimeout is how long start-up keeps retrying the first
	// connection to RabbitMQ before it fails.
	AMQPConnectTimeout time.Duration `env:"AMQP_CONNECT_TIMEOUT" envDefault:"30s"`
	// NATSURL is the NATS server with JetStream, e.g.
	// nats://127.0.0.1:4222.
	NATSURL string `env:"NATS_URL" secret:"url"`
	// NATSMaxAge is how long the streams the service creates on NATS keep
	// a message, acknowledged or not: how long a handler may be down
	// without losing what was published meanwhile.
	NATSMaxAge time.Duration `env:"NATS_MAX_AGE" envDefault:"168h"`
	// RedisStreamURL is the Redis node of the redisstream transport, e.g.
	// redis://127.0.0.1:6379/1; REDIS_URL when unset.
	RedisStreamURL string `env:"REDIS_STREAM_URL" secret:"url"`
	// RedisStreamMaxLen caps each stream of the redisstream transport at
	// about this many entries, dropping the oldest whether or not every
	// handler has read them; 0 never trims (acknowledged entries stay
	// until an operator trims them).
	RedisStreamMaxLen int64 `env:"REDIS_STREAM_MAXLEN" envDefault:"0"`
	// SQLPollInterval is how often the sql transport polls for new messages
	// when a topic is idle.
	SQLPollInterval time.Duration `env:"SQL_POLL_INTERVAL" envDefault:"100ms"`

	// HTTPAddr is where the API listens, and /metrics, /healthz, /readyz
	// and the key admin (/admin/) too unless INTERNAL_ADDR is set.
	HTTPAddr string `env:"HTTP_ADDR" envDefault:":8080"`
	// InternalAddr, when set, is where /metrics, /healthz, /readyz and the
	// key admin (/admin/) listen instead of HTTP_ADDR, which then serves
	// the API only: a port for the cluster's probes, Prometheus and
	// operators that the public network never reaches (the Kubernetes
	// manifests use :9090). Unset, everything is on HTTP_ADDR.
	InternalAddr string `env:"INTERNAL_ADDR"`
	// TopicPrefix is prepended to every topic and consumer group on the
	// broker, so that several environments (or test runs) can share one
	// broker without seeing each other's messages. Handlers never see it.
	TopicPrefix string `env:"TOPIC_PREFIX"`
	// ServiceName prefixes consumer groups and queues, and names the service
	// in logs.
	ServiceName string `env:"SERVICE_NAME" envDefault:"onceflow"`

	// DedupMode is lease (a claim with a lease and heartbeat, any store,
	// any side effect) or transaction (exactly-once for effects in
	// PostgreSQL: the claim, the handler's ledger writes, its result and
	// its outgoing messages commit in one transaction; needs
	// STORE=postgres). See "Lease mode or exactly-once mode" in docs/concepts.md.
	DedupMode string `env:"DEDUP_MODE" envDefault:"lease" allowed:"lease|transaction"`
	// DedupTTL is how long completed records are kept: the window within
	// which a duplicate is recognised.
	DedupTTL time.Duration `env:"DEDUP_TTL" envDefault:"24h"`
	// DedupLease is how long a claim is held without a heartbeat. It must
	// exceed HandlerTimeout.
	DedupLease time.Duration `env:"DEDUP_LEASE" envDefault:"30s"`
	// DedupOnInProgress is reject (the broker redelivers later) or wait
	// (for up to DedupWait).
	DedupOnInProgress string `env:"DEDUP_ON_IN_PROGRESS" envDefault:"reject" allowed:"reject|wait"`
	// DedupWait bounds the wait policy.
	DedupWait time.Duration `env:"DEDUP_WAIT" envDefault:"5s"`
	// DedupOnStoreError is fail-closed (the broker redelivers) or fail-open
	// (process unguarded, counted as a risk).
	DedupOnStoreError string `env:"DEDUP_ON_STORE_ERROR" envDefault:"fail-closed" allowed:"fail-closed|fail-open"`
	// DedupCacheSize is how many completed records a local cache in front
	// of the redis or postgres store keeps in lease mode, so that a hot
	// duplicate costs no round trip; 0 turns the cache off.
	DedupCacheSize int `env:"DEDUP_CACHE_SIZE" envDefault:"10000"`
	// DedupCacheMaxAge bounds how long a cached record is served: after a
	// key is removed from the store by another instance (an admin evict),
	// this instance may still answer it as a duplicate for this long.
	DedupCacheMaxAge time.Duration `env:"DEDUP_CACHE_MAX_AGE" envDefault:"30s"`
	// MemoryMaxRecords is how many records of the message handlers
	// STORE=memory holds. It never drops a live record to make room: when
	// it is full, a message with a new key is retried and nacked until
	// records expire (outcome store_full). Size it for the new keys within
	// DEDUP_TTL, or use redis or postgres. See docs/security.md.
	MemoryMaxRecords int `env:"MEMORY_MAX_RECORDS" envDefault:"100000"`
	// MemoryMaxBytes bounds, in bytes, what the message handlers' records
	// take in STORE=memory (keys, fingerprints, results and 256 bytes of
	// overhead each), as MEMORY_MAX_RECORDS bounds their number.
	MemoryMaxBytes int64 `env:"MEMORY_MAX_BYTES" envDefault:"268435456"`
	// MemoryMaxHTTPRecords is how many records of the HTTP face
	// STORE=memory holds, apart from the handlers' so that a flood of
	// requests never fills theirs: when it is full, a request with a new
	// key gets 503 with a Retry-After of when its soonest record expires.
	MemoryMaxHTTPRecords int `env:"MEMORY_MAX_HTTP_RECORDS" envDefault:"100000"`
	// MemoryMaxHTTPBytes bounds, in bytes, what the HTTP face's records
	// take in STORE=memory, as MEMORY_MAX_HTTP_RECORDS bounds their number.
	MemoryMaxHTTPBytes int64 `env:"MEMORY_MAX_HTTP_BYTES" envDefault:"268435456"`
	// MemoryHTTPClientShare is the percentage of MEMORY_MAX_HTTP_RECORDS
	// and MEMORY_MAX_HTTP_BYTES one client may hold: beyond it its
	// requests with new keys get 429 with a Retry-After of when its own
	// soonest record expires, and other clients are still served. 100: no
	// share. See docs/security.md for the arithmetic.
	MemoryHTTPClientShare int `env:"MEMORY_HTTP_CLIENT_SHARE" envDefault:"25"`
	// PoisonMaxMessages is how many poisoned messages the service keeps
	// for operators (in PostgreSQL with DATABASE_URL, else in Redis with
	// STORE=redis, else in memory), redriven and discarded ones included
	// until POISON_RETENTION ends. When it is full, a poisoned message
	// stays on the poison topic, unacknowledged, until there is room: none
	// is dropped. See "When messages are poisoned" in docs/operations.md.
	PoisonMaxMessages int `env:"POISON_MAX_MESSAGES" envDefault:"100000"`
	// PoisonMaxBytes bounds, in bytes, what the kept poisoned messages
	// take (payloads, metadata and reasons), as POISON_MAX_MESSAGES bounds
	// their number.
	PoisonMaxBytes int64 `env:"POISON_MAX_BYTES" envDefault:"268435456"`
	// PoisonRetention is how long a poisoned message is kept, whatever is
	// done with it.
	PoisonRetention time.Duration `env:"POISON_RETENTION" envDefault:"336h"`

	// APIKeys, when set, requires "Authorization: Bearer <key>" on the API
	// (/v1/...): comma-separated key:client pairs such as
	// "<key>:client-a,<key>:client-b", split at the last colon; a client may
	// have several keys, to rotate them. Each key is a random string of at
	// least 16 characters, at least 8 of them different (openssl rand -hex
	// 16 makes one): start-up refuses any other. The client scopes Idempotency-Key
	// records, so no client can replay or block another's response, and
	// the domain's data (what a client creates can be its own: the domain
	// reads the client from the request). Unset, the service refuses to
	// start unless ALLOW_ANONYMOUS=true.
	APIKeys string `env:"API_KEYS" secret:"apikeys"`
	// AllowAnonymous, with API_KEYS unset, serves the API to anyone as one
	// anonymous client: every caller shares one namespace of
	// Idempotency-Keys and sees what every other caller created, and one
	// caller may be replayed another's response. For development and
	// tests (make run and docker compose set it); start-up logs a warning.
	// With API_KEYS set it changes nothing.
	AllowAnonymous bool `env:"ALLOW_ANONYMOUS" envDefault:"false"`
	// PublishAPIKey is the key a domain's traffic commands (the example's
	// publish and load) send to a service that has API_KEYS set.
	PublishAPIKey string `env:"PUBLISH_API_KEY" secret:"true"`
	// AdminAPIKeys, when set, serves the key admin under /admin/keys (see
	// `onceflow keys`) to its operators, one key each: comma-separated
	// key:operator pairs such as "<key>:alice,<key>:bob", split at the last
	// colon. A request needs "Authorization: Bearer <key>", and the audit
	// log names the operator whose key it sent. Each key follows the rule
	// of API_KEYS' keys, differs from the others and from every key of
	// API_KEYS: it opens every client's records. Unset, with ADMIN_API_KEY
	// unset too, those routes do not exist. A source that sends 10 wrong
	// keys is throttled (429) and regains one attempt every 6 seconds;
	// refusals are counted (onceflow_admin_auth_failures_total,
	// onceflow_admin_auth_throttled_total). See docs/security.md.
	AdminAPIKeys string `env:"ADMIN_API_KEYS" secret:"apikeys"`
	// AdminAPIKey is one key shared by every operator, taken as the
	// operator "admin" of ADMIN_API_KEYS: the audit log cannot tell who
	// acted, and start-up warns. Set with ADMIN_API_KEYS, it is refused.
	AdminAPIKey string `env:"ADMIN_API_KEY" secret:"true"`
	// OperatorAPIKey is the key `onceflow keys` sends: the operator's own
	// key of the service's ADMIN_API_KEYS, whose name the service logs
	// for every action. Unset, it sends ADMIN_API_KEY. The service itself
	// does not read it.
	OperatorAPIKey string `env:"OPERATOR_API_KEY" secret:"true"`
	// IdempotencyMaxBody bounds, in bytes, the response body stored for an
	// Idempotency-Key: a larger response is served but not stored, and its
	// key is released. 64 KiB, far above an API's answers and below what a
	// record store should hold per key: every stored answer is replayed
	// and kept for DEDUP_TTL. The HTTP face shares the DEDUP_* settings:
	// TTL, lease, in-progress policy (reject: 409; wait: a bounded wait,
	// then the replay) and store-error policy (fail-closed: 503).
	IdempotencyMaxBody int64 `env:"IDEMPOTENCY_MAX_BODY" envDefault:"65536"`
	// IdempotencyClientRecords is each client's quota of requests with a
	// new Idempotency-Key (each creates a record): that many at once, and
	// that many per IDEMPOTENCY_CLIENT_WINDOW after. Beyond it a request
	// gets 429 with Retry-After, before the store is asked. The client is
	// the API_KEYS entry; without API_KEYS every caller shares one quota.
	// 0 turns the quota off.
	IdempotencyClientRecords int `env:"IDEMPOTENCY_CLIENT_RECORDS" envDefault:"1000"`
	// IdempotencyClientBytes is each client's budget of stored answers, in
	// bytes (each answer counted with its record key once stored): that
	// many at once, and that many per IDEMPOTENCY_CLIENT_WINDOW after.
	// A client past it gets 429 with Retry-After for new keys until it is
	// paid back, so that large answers fill a store no faster than small
	// ones. 0 turns the budget off.
	IdempotencyClientBytes int64 `env:"IDEMPOTENCY_CLIENT_BYTES" envDefault:"1048576"`
	// IdempotencyClientWindow is the window of IDEMPOTENCY_CLIENT_RECORDS
	// and IDEMPOTENCY_CLIENT_BYTES.
	IdempotencyClientWindow time.Duration `env:"IDEMPOTENCY_CLIENT_WINDOW" envDefault:"1s"`

	// MaxMessageBytes is the largest message payload, in bytes, a handler
	// is given: a larger one goes to the poison topic at once, with reason
	// payload_too_large, before it is retried or claimed. It is above the
	// default limits of Kafka and NATS (1 MB), and bounds what RabbitMQ,
	// Redis Streams and PostgreSQL would take. 0: no limit.
	MaxMessageBytes int `env:"MAX_MESSAGE_BYTES" envDefault:"4194304"`
	// MessageSigningSecrets, when set, closes the producer trust boundary:
	// every message the service publishes (from its API, its handlers, its
	// outbox, a domain's traffic commands) is signed with the first of
	// these comma-separated secrets, for its topic as it is on the broker
	// (after TOPIC_PREFIX) and the time it is signed, and a handler takes
	// only messages signed by one of them for the topic it reads, within
	// MESSAGE_SIGNING_MAX_AGE; any other goes to the poison topic with
	// reason bad_signature, before its key is claimed. So a producer
	// without a secret cannot pre-empt a key, and a message copied from
	// another environment's topic is refused. Give each environment
	// secrets of its own. Each secret is at least 32 characters; list a
	// new one second, then first, to rotate. Unset, whoever may publish to
	// a topic may also take its keys. See docs/security.md.
	MessageSigningSecrets string `env:"MESSAGE_SIGNING_SECRETS" secret:"true"`
	// MessageSigningMaxAge is how long a message's signature holds: a
	// handler refuses a message signed longer ago as a bad signature
	// ("signature expired"), and one signed more than a minute ahead of
	// its clock. 0 (unset) is DEDUP_TTL, which it may not exceed: a
	// message older than the dedup window could no longer be recognised
	// as a duplicate. Keep it above the longest a message may wait on the
	// broker before it is first handled (a consumer outage), or such a
	// message is parked too. Used with MESSAGE_SIGNING_SECRETS.
	MessageSigningMaxAge time.Duration `env:"MESSAGE_SIGNING_MAX_AGE"`
	// HandlerConcurrency is how many messages each handler holds in flight
	// at once, per replica: its subscriber hands out that many and the
	// router runs them side by side, so one message's record-store round
	// trips do not hold up the next. Messages in flight complete in any
	// order (Kafka keeps the order per key); the sql transport holds one
	// at a time whatever this says. A route may set its own
	// (domain.Route.Concurrency). See "Concurrency and order" in
	// docs/brokers.md.
	HandlerConcurrency int `env:"HANDLER_CONCURRENCY" envDefault:"16"`
	// HandlerTimeout cancels a handler's context after this long: a message
	// handler's attempt, and an API request's, so that a request waiting
	// on a message's delivery (on gochannel, until its handler acks it) is
	// answered, 503, instead of waiting without limit.
	HandlerTimeout time.Duration `env:"HANDLER_TIMEOUT" envDefault:"10s"`
	// RetryMax is how often a failing message is retried in process before
	// it goes to the poison topic.
	RetryMax int `env:"RETRY_MAX" envDefault:"3"`
	// RetryInterval is the first retry's backoff; it doubles each time.
	RetryInterval time.Duration `env:"RETRY_INTERVAL" envDefault:"100ms"`
	// ShutdownTimeout bounds the graceful shutdown.
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"30s"`

	// LogLevel is debug, info, warn or error.
	LogLevel string `env:"LOG_LEVEL" envDefault:"info" allowed:"debug|info|warn|error"`
	// LogFormat is auto (JSON lines, or text when the log goes to a
	// terminal), text or json.
	LogFormat string `env:"LOG_FORMAT" envDefault:"auto" allowed:"auto|text|json"`

	// OTLPEndpoint is the base URL of an OTLP/HTTP collector, such as
	// http://localhost:4318: traces go to its /v1/traces. Unset, with
	// OTLPTracesEndpoint unset too, nothing is traced.
	OTLPEndpoint string `env:"OTEL_EXPORTER_OTLP_ENDPOINT" secret:"url"`
	// OTLPTracesEndpoint is the full URL traces are sent to; it overrides
	// OTLPEndpoint. The OpenTelemetry SDK reads the other standard
	// variables itself (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION,
	// _CERTIFICATE, OTEL_TRACES_SAMPLER, OTEL_RESOURCE_ATTRIBUTES); the
	// service is named SERVICE_NAME unless OTEL_SERVICE_NAME is set.
	OTLPTracesEndpoint string `env:"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" secret:"url"`
}

// runtimeAllowed lists, by field of Config, the settings whose allowed
// values the build decides rather than a tag: TRANSPORT allows the kinds
// of package transport, so that removing a broker (its package and its
// entry there) changes nothing here.
var runtimeAllowed = map[string][]string{"Transport": transport.Kinds}

// LoadConfig reads the configuration from environ (os.Environ's form),
// fills defaults and validates it. Its error names the variable and what it
// allows, in one line.
func LoadConfig(environ []string) (Config, error) {
	var cfg Config
	err := env.ParseWithOptions(&cfg, env.Options{Environment: env.ToMap(environ)})
	if err != nil {
		return Config{}, explainParseError(err)
	}
	if cfg.MessageSigningMaxAge == 0 {
		cfg.MessageSigningMaxAge = cfg.DedupTTL // its default, logged as it applies
	}
	return cfg, cfg.Validate()
}

// Validate checks values and their combinations.
func (c Config) Validate() error {
	cv := reflect.ValueOf(c)
	for _, s := range settings() {
		if s.Allowed == nil {
			continue
		}
		if err := s.checkAllowed(s.value(cv).String()); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{
		{"DEDUP_TTL", c.DedupTTL}, {"DEDUP_LEASE", c.DedupLease}, {"DEDUP_WAIT", c.DedupWait},
		{"HANDLER_TIMEOUT", c.HandlerTimeout}, {"RETRY_INTERVAL", c.RetryInterval},
		{"SHUTDOWN_TIMEOUT", c.ShutdownTimeout}, {"AMQP_CONNECT_TIMEOUT", c.AMQPConnectTimeout},
		{"SQL_POLL_INTERVAL", c.SQLPollInterval}, {"REDIS_WAIT_TIMEOUT", c.RedisWaitTimeout},
		{"DEDUP_CACHE_MAX_AGE", c.DedupCacheMaxAge}, {"NATS_MAX_AGE", c.NATSMaxAge},
		{"PG_PARTITION_WIDTH", c.PGPartitionWidth}, {"IDEMPOTENCY_CLIENT_WINDOW", c.IdempotencyClientWindow},
		{"POISON_RETENTION", c.PoisonRetention},
	} {
		if d.value <= 0 {
			return fmt.Errorf("%s=%v must be a positive duration such as 30s", d.name, d.value)
		}
	}
	// Counts and sizes, each with its least value and how its message
	// names the range.
	for _, n := range []struct {
		name       string
		value, min int64
		rule       string
	}{
		{"DATABASE_MAX_CONNS", int64(c.DatabaseMaxConns), 1, "at least 1"},
		{"KAFKA_PARTITIONS", int64(c.KafkaPartitions), 1, "at least 1"},
		{"HANDLER_CONCURRENCY", int64(c.HandlerConcurrency), 1, "at least 1"},
		{"DEDUP_CACHE_SIZE", int64(c.DedupCacheSize), 0, "zero (no cache) or more"},
		{"MAX_MESSAGE_BYTES", int64(c.MaxMessageBytes), 0, "0 (no limit) or more"},
		{"RETRY_MAX", int64(c.RetryMax), 0, "zero or more"},
		{"REDIS_WAIT_REPLICAS", int64(c.RedisWaitReplicas), 0, "zero (do not wait) or more"},
		{"REDIS_STREAM_MAXLEN", int64(c.RedisStreamMaxLen), 0, "0 (never trim) or more"},
		{"STORE_BATCH_SIZE", int64(c.StoreBatchSize), 0, "0 or more (0 or 1 turns batching off)"},
		{"MEMORY_MAX_RECORDS", int64(c.MemoryMaxRecords), 1, "at least 1"},
		{"MEMORY_MAX_HTTP_RECORDS", int64(c.MemoryMaxHTTPRecords), 1, "at least 1"},
		{"MEMORY_MAX_BYTES", c.MemoryMaxBytes, 1, "at least 1 (bytes)"},
		{"MEMORY_MAX_HTTP_BYTES", c.MemoryMaxHTTPBytes, 1, "at least 1 (bytes)"},
		{"POISON_MAX_MESSAGES", int64(c.PoisonMaxMessages), 1, "at least 1"},
		{"POISON_MAX_BYTES", c.PoisonMaxBytes, 1, "at least 1 (bytes)"},
		{"IDEMPOTENCY_CLIENT_BYTES", c.IdempotencyClientBytes, 0, "zero (no budget) or more (bytes)"},
		{"IDEMPOTENCY_CLIENT_RECORDS", int64(c.IdempotencyClientRecords), 0, "zero (no quota) or more"},
		{"IDEMPOTENCY_MAX_BODY", c.IdempotencyMaxBody, 1, "at least 1 (bytes)"},
	} {
		if n.value < n.min {
			return fmt.Errorf("%s=%d must be %s", n.name, n.value, n.rule)
		}
	}
	if c.MemoryHTTPClientShare < 1 || c.MemoryHTTPClientShare > 100 {
		return fmt.Errorf("MEMORY_HTTP_CLIENT_SHARE=%d must be a percentage from 1 to 100 (100: no share)", c.MemoryHTTPClientShare)
	}
	if c.Store != "redis" && c.RedisRequireDurable {
		return fmt.Errorf("REDIS_REQUIRE_DURABLE=true applies to STORE=redis only (STORE=%q)", c.Store)
	}
	if p := c.redisKeyPrefix(); c.Store == "redis" && strings.Contains(p, "{") {
		return fmt.Errorf("REDIS_KEY_PREFIX=%q may not hold \"{\": on a Redis Cluster it would put every record in one slot (unset, it is TOPIC_PREFIX + SERVICE_NAME + \":idem:\")", p)
	}
	if c.Store != "redis" && c.RedisWaitReplicas > 0 {
		return fmt.Errorf("REDIS_WAIT_REPLICAS=%d applies to STORE=redis only (STORE=%q)", c.RedisWaitReplicas, c.Store)
	}
	if c.DedupLease <= c.HandlerTimeout {
		return fmt.Errorf("DEDUP_LEASE=%v must exceed HANDLER_TIMEOUT=%v: a lease that ends while its handler runs lets a duplicate in", c.DedupLease, c.HandlerTimeout)
	}
	if c.HandlerTimeout >= writeTimeout {
		return fmt.Errorf("HANDLER_TIMEOUT=%v must be below the API's write timeout, %v: an API request ends at HANDLER_TIMEOUT, and its answer must still be written", c.HandlerTimeout, writeTimeout)
	}
	if c.DedupMode == "transaction" && c.Store != "postgres" {
		return fmt.Errorf("DEDUP_MODE=transaction requires STORE=postgres (STORE=%q): use DEDUP_MODE=lease with other stores", c.Store)
	}
	if c.PGRecordsLayout == "partitioned" && c.DedupMode == "transaction" && c.Transport == "sql" {
		return errors.New("PG_RECORDS_LAYOUT=partitioned does not support DEDUP_MODE=transaction with TRANSPORT=sql: " +
			"Watermill SQL consumes in REPEATABLE READ transactions, and the partitioned layout claims under READ COMMITTED only " +
			"(the claim's snapshot must follow its key's lock); use PG_RECORDS_LAYOUT=rows, DEDUP_MODE=lease or another transport")
	}
	if err := c.validateAdminKeys(); err != nil {
		return err
	}
	if err := c.validateSigning(); err != nil {
		return err
	}
	if _, err := c.otlpTracesURL(); err != nil {
		return err
	}
	if err := c.validateSecurity(); err != nil {
		return err
	}
	if c.InternalAddr != "" && c.InternalAddr == c.HTTPAddr && !strings.HasSuffix(c.HTTPAddr, ":0") {
		return fmt.Errorf("INTERNAL_ADDR=%q must differ from HTTP_ADDR: leave it unset to serve everything on HTTP_ADDR", c.InternalAddr)
	}
	return c.validateAddresses()
}

// validateAddresses requires the address of every backend the chosen
// transport and store use.
func (c Config) validateAddresses() error {
	need := func(name string, set bool, why string) error {
		if !set {
			return fmt.Errorf("%s is required when %s", name, why)
		}
		return nil
	}
	return errors.Join(
		when(c.Transport == "kafka", func() error { return need("KAFKA_BROKERS", len(c.KafkaBrokers) > 0, "TRANSPORT=kafka") }),
		when(c.Transport == "amqp", func() error { return need("AMQP_URL", c.AMQPURL != "", "TRANSPORT=amqp") }),
		when(c.Transport == "sql", func() error { return need("DATABASE_URL", c.DatabaseURL != "", "TRANSPORT=sql") }),
		when(c.Transport == "nats", func() error { return need("NATS_URL", c.NATSURL != "", "TRANSPORT=nats") }),
		when(c.Transport == "redisstream", func() error {
			_, url := c.redisStream()
			return need("REDIS_STREAM_URL or REDIS_URL", url != "", "TRANSPORT=redisstream")
		}),
		when(c.Store == "postgres", func() error { return need("DATABASE_URL", c.DatabaseURL != "", "STORE=postgres") }),
		when(c.Store == "redis", func() error {
			return need("REDIS_URL or REDIS_ADDRS", c.RedisURL != "" || len(c.RedisAddrs) > 0, "STORE=redis")
		}),
	)
}

func when(cond bool, check func() error) error {
	if !cond {
		return nil
	}
	return check()
}

// explainParseError turns the env library's error, which names Go fields,
// into one that names the environment variable.
func explainParseError(err error) error {
	var pe env.ParseError
	if errors.As(err, &pe) {
		if f, ok := reflect.TypeFor[Config]().FieldByName(pe.Name); ok {
			name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
			return fmt.Errorf("%s: %v", name, pe.Err)
		}
	}
	return fmt.Errorf("reading configuration: %w", err)
}

// LogValue logs the effective configuration, every setting of the service
// and of the backends it opens (see logged) under its variable's name in
// lower case, with secrets masked as their fields' secret tags say:
// connection URLs without their credentials, API keys without the keys,
// other secrets only as whether they are set.
func (c Config) LogValue() slog.Value {
	cv := reflect.ValueOf(c)
	attrs := make([]slog.Attr, 0, len(settings()))
	for _, s := range settings() {
		if c.logged(s) {
			attrs = append(attrs, s.logAttr(s.value(cv)))
		}
	}
	return slog.GroupValue(attrs...)
}

// redisKeyPrefix is REDIS_KEY_PREFIX, or else TOPIC_PREFIX + SERVICE_NAME
// + ":idem:".
func (c Config) redisKeyPrefix() string {
	if c.RedisKeyPrefix != "" {
		return c.RedisKeyPrefix
	}
	return c.TopicPrefix + c.ServiceName + ":idem:"
}

// retryMaxInterval is the ceiling of the in-process retry backoff; the sql
// transport and the outbox relay resend nacked messages at the same pace.
func (c Config) retryMaxInterval() time.Duration { return 10 * c.RetryInterval }
