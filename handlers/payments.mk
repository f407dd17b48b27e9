# The payments example's make targets, included by the Makefile: they go
# with the example when a fork replaces handlers/.

FUZZ_TARGETS += \
	./handlers:FuzzDecodePaymentRequested \
	./handlers:FuzzDecodePaymentCharged

# make provider: the payments example's payment provider on its own, its
# records and charges in memory, or in PostgreSQL with
# PROVIDER_DATABASE_URL. `make run` starts one in process; to charge this
# one instead, PAYMENT_PROVIDER_URL=http://127.0.0.1:8090 make run.
PROVIDER_ADDR ?= 127.0.0.1:8090

.PHONY: provider
provider: build ## run the payments example's payment provider on PROVIDER_ADDR (127.0.0.1:8090): POST /charges, GET /charges/count
	./bin/onceflow provider --addr $(PROVIDER_ADDR)

# make load: what to send and where. LOAD_TRANSPORT=gochannel goes through the
# HTTP API of `make run`; kafka, amqp and sql publish to the compose stack's
# broker on its host address (`docker compose --profile <transport> up`).
LOAD_TRANSPORT ?= gochannel
LOAD_ARGS ?= --rate 200 --duration 30s --concurrency 16 --dup-ratio 0.2

.PHONY: load
load: build ## load the service on :8080 (make run; compose stack: LOAD_TRANSPORT=kafka|amqp|sql) with LOAD_ARGS, then check every payment was charged once
	KAFKA_BROKERS=$${KAFKA_BROKERS:-127.0.0.1:9092} \
	AMQP_URL=$${AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/} \
	DATABASE_URL="$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}" \
		./bin/onceflow load --transport $(LOAD_TRANSPORT) $(LOAD_ARGS)

