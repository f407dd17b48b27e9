package app

import (
	"strings"
	"testing"
)

// TestRedactURLShapes: whatever shape a connection URL takes, redact keeps
// where it points and masks every part that can carry a secret.
func TestRedactURLShapes(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"", ""},
		{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"postgres://postgres@postgres:5432/test?sslmode=disable", "postgres://xxxxx@postgres:5432/test?sslmode=disable"},
		// a password, in the user part or in the query
		{"postgres://app:s3cret@db:5432/app", "postgres://app:xxxxx@db:5432/app"},
		{"redis://:s3cret@cache:6379/0", "redis://:xxxxx@cache:6379/0"},
		{"postgres://app@db/app?password=s3cret", "postgres://xxxxx@db/app?password=xxxxx"},
		{"postgres://db/app?sslmode=verify-full&sslpassword=s3cret&sslkey=/k.pem", "postgres://db/app?sslmode=verify-full&sslpassword=xxxxx&sslkey=xxxxx"},
		{"amqp://guest:s3cret@mq:5672/vhost?heartbeat=10", "amqp://guest:xxxxx@mq:5672/vhost?heartbeat=10"},
		// a user name alone can be a token
		{"nats://s3cret@nats:4222", "nats://xxxxx@nats:4222"},
		{"nats://s3cret:@nats:4222", "nats://xxxxx@nats:4222"},
		// tokens and keys in the query, whatever their spelling
		{"http://otel:4318?api_key=s3cret", "http://otel:4318?api_key=xxxxx"},
		{"https://otel/v1/traces?apikey=s3cret&x=1", "https://otel/v1/traces?apikey=xxxxx&x=1"},
		{"http://otel:4318/?token=s3cret&Access_Token=s3cret&X-API-Key=s3cret", "http://otel:4318/?token=xxxxx&Access_Token=xxxxx&X-API-Key=xxxxx"},
		{"http://otel:4318/?secret=s3cret&client_secret=s3cret&auth=s3cret", "http://otel:4318/?secret=xxxxx&client_secret=xxxxx&auth=xxxxx"},
		{"https://blob/c?sv=2024&sig=s3cret", "https://blob/c?sv=2024&sig=xxxxx"},
		{"http://otel:4318/?pass%77ord=s3cret", "http://otel:4318/?pass%77ord=xxxxx"},
		{"http://otel:4318/?%zz=s3cret", "http://otel:4318/?%zz=xxxxx"},
		{"http://otel:4318/?password", "http://otel:4318/?password=xxxxx"},
		// a password cut short by an unescaped # or / or ?
		{"postgres://app:1#s3cret@db/app", "***"},
		{"postgres://app:12/s3cret@db/app", "***"},
		{"postgres://app:pa/s3cret@db/app", "***"},
		{"redis://:12?s3cret@cache:6379", "***"},
		{"redis://:pa?s3cret@cache:6379", "***"},
		{"http://otel:4318/#s3cret", "http://otel:4318/#xxxxx"},
		// not a URL: masked whole
		{"host=db user=app password=s3cret", "***"},
		{"s3cret", "***"},
		// no "//": the user part is in the opaque part
		{"app:s3cret@db:5432", "app:xxxxx@db:5432"},
		{"localhost:4318", "localhost:4318"},
	} {
		got := redact(tc.raw)
		if got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.raw, got, tc.want)
		}
		if strings.Contains(got, "s3cret") {
			t.Errorf("redact(%q) = %q reveals the secret", tc.raw, got)
		}
	}
}
