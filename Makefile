# onceflow — common tasks. `make help` lists them.

GO        ?= go
PKGS      ?= ./...
# The dev tools (the bench, the fault suite, the rename, the image size,
# the in-process Kafka, the stores' linearizability runs, the repository
# checks) are a module of their own under tools/, so that their dependencies (plotting, Toxiproxy,
# profiles, porcupine, go.mod parsing, YAML) stay out of the go.mod a
# library user's build reads. Every target that runs,
# tests or lints the root module does the same in tools/.
TOOLS     = tools
TOOLS_PKGS ?= ./...
# The compose files: docker-compose.yml, which names no domain, and the
# domain's overlay, handlers/compose.yml (its own services, its settings
# for the service's), while it exists.
COMPOSE_FILES = docker-compose.yml $(wildcard handlers/compose.yml)
COMPOSE   ?= docker compose $(addprefix -f ,$(COMPOSE_FILES))
TEST_TIMEOUT ?= 9m
# make test runs the root module's tests and tools/' side by side, each
# this many packages at once. Most of the time the longest (the service's
# tests in app/, the fault suite in tools/) wait on brokers, stores and
# leases, so four keep two cores busy; their PostgreSQL connections (8 per
# service instance) stay within the 100 a default server allows.
TEST_PACKAGES ?= 2
FUZZTIME  ?= 60s
# Minimizing an input that found new coverage is bounded by runs: at the
# default (60s) one derived from a 100 KiB seed holds a worker for the whole
# FUZZTIME.
FUZZMINIMIZETIME ?= 1000x

# Every fuzz target, as package:Target; `make fuzz` runs each for FUZZTIME.
FUZZ_TARGETS = \
	./stores:FuzzStorageKey \
	./middleware/consume:FuzzMessageKey \
	./middleware/consume:FuzzFingerprint \
	./middleware/consume:FuzzMessageEnvelope \
	./middleware/idempotencykey:FuzzHTTPIdempotency \
	./middleware/idempotencykey:FuzzIdempotencyKey \
	./middleware/idempotencykey:FuzzRequestFingerprint \
	./middleware/idempotencykey:FuzzResponseEnvelope

.PHONY: help run build test test-short e2e fuzz chaos bench bench-tools vet lint vulncheck image-size rename example-check up down clean

help: ## list targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# make run serves the API without keys, to every caller as one anonymous
# client (the service refuses to start with neither API_KEYS nor
# ALLOW_ANONYMOUS=true). With API_KEYS set (API_KEYS=k3y:me make run) every
# request needs a key, and ALLOW_ANONYMOUS changes nothing.
run: build ## run the service on :8080 (in-process transport, memory store, no API keys: nothing to install)
	ALLOW_ANONYMOUS=true ./bin/onceflow serve

build: ## build bin/onceflow
	$(GO) build -o bin/onceflow ./cmd/onceflow

# The packages with benchmarks, of the root module and of tools/. make
# test runs each benchmark once (-benchtime=1x, BENCH_SMOKE=1 for the
# smallest sizes) with the race detector, reusing the test step's build, to
# keep them compiling and running; `make bench` is where they measure. (go
# test runs benchmarks of different packages one at a time, so they are a
# step of their own.)
bench_pkgs = $(shell cd $(1) && grep -rl --include='*_test.go' '^func Benchmark' . | grep -v '^\./$(TOOLS)/' | xargs -n1 dirname | sort -u)
BENCH_PKGS = $(call bench_pkgs,.)
TOOLS_BENCH_PKGS = $(call bench_pkgs,$(TOOLS))

test: lint ## lint, then every test (unit and integration) and every benchmark once, with the race detector, the root module beside tools/
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-root test-tools

# test-root and test-tools are make test's two halves, run side by side:
# each module's tests, then its benchmarks once.
.PHONY: test-root test-tools
test-root:
	$(GO) test -race -count=1 -p $(TEST_PACKAGES) -timeout $(TEST_TIMEOUT) $(PKGS)
	BENCH_SMOKE=1 $(GO) test -race -count=1 -run '^$$' -bench . -benchtime=1x $(BENCH_PKGS)

test-tools:
	cd $(TOOLS) && $(GO) test -race -count=1 -p $(TEST_PACKAGES) -timeout $(TEST_TIMEOUT) $(TOOLS_PKGS)
	cd $(TOOLS) && BENCH_SMOKE=1 $(GO) test -race -count=1 -run '^$$' -bench . -benchtime=1x $(TOOLS_BENCH_PKGS)

test-short: ## unit tests only: no services needed
	$(GO) test -short -count=1 $(PKGS)
	cd $(TOOLS) && $(GO) test -short -count=1 $(TOOLS_PKGS)

# make e2e: distinct requests of the test domain per cell, each sent three
# times (make test's short variant sends 250).
E2E_REQUESTS ?= 2000

e2e: ## the end-to-end suite (transport x store) on the test domain, E2E_REQUESTS (2,000) per cell, against the `make up` services; prints each cell's time
	REQUIRE_SERVICES=1 TEST_KAFKA_BROKERS=127.0.0.1:9092 E2E_REQUESTS=$(E2E_REQUESTS) E2E_REPORT=$(CURDIR)/e2e-report.md \
		$(GO) test -race -count=1 -timeout 30m -run TestEndToEnd -v ./app/
	@cat e2e-report.md

fuzz: ## run every fuzz target for FUZZTIME (60s) in turn; fails on the first finding
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $${t#*:} ($${t%%:*}, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $${t%%:*}/; \
	done

CHAOS_RUN ?=
CHAOS_REPORT ?= $(if $(CHAOS_RUN),$(CURDIR)/chaos-report.md,$(CURDIR)/docs/RELIABILITY.md)

# make chaos: the fault suite (tools/internal/chaos, in the tools module;
# make test runs its short variant), on the template's test domain, built
# as the suite's own service binary.
chaos: ## the fault suite at full size against this machine's services; writes docs/RELIABILITY.md (one row: CHAOS_RUN='<pattern>', written to chaos-report.md)
	@mkdir -p docs
	cd $(TOOLS) && REQUIRE_SERVICES=1 CHAOS_SCALE=full CHAOS_REPORT=$(CHAOS_REPORT) \
		$(GO) test -count=1 -timeout 120m -v -run '$(or $(value CHAOS_RUN),TestChaos)' ./internal/chaos/
	@cat $(CHAOS_REPORT)

# make linearizability: the long variant of the stores' linearizability
# check (tools/internal/linearizable, in the tools module; make test runs
# the short one): racing clients for 20s per store, with repeated faults
# (Redis killed and restarted, PostgreSQL crashed, Cluster failovers). A
# violation's visualisation is written under $TMPDIR/onceflow-linearizability.
.PHONY: linearizability
linearizability: ## the stores' linearizability check, long variant: 20s per store with repeated faults, against this machine's services
	cd $(TOOLS) && REQUIRE_SERVICES=1 LINEARIZABILITY=long \
		$(GO) test -count=1 -timeout 30m -v -run 'TestLinearizable|TestBrokenStoresAreCaught' ./internal/linearizable/

# make bench-retention: how many expired records the retention bench fills.
RETENTION_ROWS ?= 10000000

.PHONY: bench-retention
bench-retention: ## PostgreSQL retention against RETENTION_ROWS (10M) expired records, rows and partitioned layouts: rows/s, claim p99 sweeping vs idle
	cd $(TOOLS) && $(GO) test -tags bench -count=1 -run TestScale -v -timeout 1h ./internal/bench/retention/ -args -rows=$(RETENTION_ROWS)

# make bench: the published run. BENCH_SIZE=short runs fewer, shorter rounds.
BENCH_SIZE ?= full

bench: bench-tools ## onceflow side by side with redis-benchmark, pgbench and its peers; writes docs/PERFORMANCE.md and prints TARGET lines
	@mkdir -p docs
	cd $(TOOLS) && $(GO) run ./cmd/bench -size $(BENCH_SIZE) -out ../docs/PERFORMANCE.md

bench-tools: ## install redis-benchmark (redis-tools) and pgbench (postgresql-contrib) when missing
	@missing=""; \
	redis-benchmark --version >/dev/null 2>&1 || missing="$$missing redis-tools"; \
	pgbench --version >/dev/null 2>&1 || missing="$$missing postgresql-contrib"; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

vet: ## go vet, the root module and tools/
	$(GO) vet $(PKGS)
	cd $(TOOLS) && $(GO) vet $(TOOLS_PKGS)

# staticcheck 2026.2.2 (module version v0.8.2), whose go.mod requires Go
# 1.26; go install puts each version in a directory of its own under
# bin/tools, so changing STATICCHECK_VERSION installs that one.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK = $(CURDIR)/bin/tools/staticcheck-$(STATICCHECK_VERSION)/staticcheck

lint: vet $(STATICCHECK) ## gofmt, go vet and staticcheck (STATICCHECK_VERSION, installed in bin/tools), the root module and tools/; zero findings
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "not gofmt-formatted (run gofmt -w):"; echo "$$unformatted"; exit 1; fi
	$(STATICCHECK) $(PKGS)
	cd $(TOOLS) && $(STATICCHECK) $(TOOLS_PKGS)

$(STATICCHECK):
	GOBIN=$(@D) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# govulncheck, whose go.mod requires Go 1.26; like staticcheck, one
# directory per version under bin/tools.
GOVULNCHECK_VERSION ?= v1.9.0
GOVULNCHECK = $(CURDIR)/bin/tools/govulncheck-$(GOVULNCHECK_VERSION)/govulncheck

vulncheck: $(GOVULNCHECK) ## known vulnerabilities reachable from the code, the root module and tools/ (govulncheck GOVULNCHECK_VERSION; needs vuln.go.dev, so CI runs it, not make test)
	$(GOVULNCHECK) $(PKGS)
	cd $(TOOLS) && $(GOVULNCHECK) $(TOOLS_PKGS)

$(GOVULNCHECK):
	GOBIN=$(@D) $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)

image-size: ## the container image's size, measured without Docker; writes it into docs/deploying.md
	cd $(TOOLS) && $(GO) run ./cmd/imagesize -dockerfile ../Dockerfile -readme ../docs/deploying.md

rename: ## turn this repository into your service, in place: make rename MODULE=github.com/acme/orders NAME=orders
	@test -n "$(MODULE)" -a -n "$(NAME)" || { echo 'usage: make rename MODULE=github.com/acme/orders NAME=orders'; exit 2; }
	cd $(TOOLS) && $(GO) run ./cmd/rename -dir .. -module '$(MODULE)' -name '$(NAME)'

# make example-check: what a fork does, on copies of the tree (see
# docs/forking.md): TestFork runs the page's fork steps (make rename, the
# example deleted), puts testdata's shop domain in its place and changes
# the one line, then builds, vets, tests, lints and docs-checks both
# modules and runs the shop's end-to-end test and the short fault suite
# and bench; TestBrokerRemoved deletes one broker's folder and its case.
# Each compiles both modules anew, so CI runs it beside make test.
example-check: ## on copies of the tree: fork it as docs/forking.md says (rename, example replaced by testdata's shop) and check it as CI does; remove one broker and test the rest
	cd $(TOOLS) && REQUIRE_SERVICES=$${REQUIRE_SERVICES:-1} $(GO) test -tags examplecheck -count=1 -timeout 40m -v -run 'TestFork|TestBrokerRemoved' ./internal/repocheck/

up: ## start PostgreSQL, Redis, RabbitMQ, NATS and Kafka with docker compose and wait until healthy
	$(COMPOSE) up -d --wait postgres redis rabbitmq nats kafka

down: ## stop the compose services (make down VOLUMES=1 also removes their data)
	$(COMPOSE) down $(if $(VOLUMES),--volumes,)

clean: ## remove build output
	rm -rf bin coverage.out e2e-report.md chaos-report.md

# The domain's own targets, variables and fuzz targets (FUZZ_TARGETS +=):
# handlers/*.mk, which go with the domain when a fork replaces handlers/.
-include $(wildcard handlers/*.mk)
