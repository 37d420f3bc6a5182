# onceflow: every confirmed payment or refund becomes exactly one fiscal document.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
GOBIN := $(shell go env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)
COMMANDS := ./services/ingest/cmd/ingest ./services/relay/cmd/relay ./services/invoicer/cmd/invoicer \
	./services/reconciler/cmd/reconciler ./services/console/cmd/console ./sandbox/cmd/psp ./sandbox/cmd/fiscal ./db/cmd/migrate ./onceflowctl
STACK_ENV := eval "$$(scripts/stack.sh env)"

.PHONY: help generate verify build test bench bench-readme soak soak-readme chaos demo up down

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-13s %s\n", $$1, $$2}'

generate: ## Regenerate sqlc stores, protobuf code and the PrometheusRule from deploy/prometheus/alerts.yaml (needs sqlc, buf, protoc-gen-go; see .ci/run)
	cd db && sqlc generate
	cd proto && buf generate
	go generate ./deploy

verify: ## Check generated code is fresh, gofmt, go vet
	cd db && sqlc diff
	cd proto && buf lint && buf generate
	@git diff --exit-code -- pkg/eventspb || { echo "verify: pkg/eventspb is stale: run make generate"; exit 1; }
	@test -z "$$(git status --porcelain -- pkg/eventspb)" || { echo "verify: untracked generated files in pkg/eventspb"; exit 1; }
	@out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "verify: gofmt needed:"; echo "$$out"; exit 1; }
	go vet ./...

build: ## Build every binary into bin/
	go build -o bin/ $(COMMANDS)

test: ## Run every test (starts PostgreSQL and fauxqs when they are not running), then every fuzz target for TEST_FUZZTIME (20000x: 20,000 inputs) each
	$(STACK_ENV); go test -count=1 -timeout 30m ./...
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)

.PHONY: fuzz
FUZZTIME ?= 30s
# make test bounds each target by a count of inputs, not a duration: Go 1.26's fuzz
# coordinator can race the deadline a duration sets and fail a clean run with "context
# deadline exceeded"; a count sets no deadline.
TEST_FUZZTIME ?= 20000x
fuzz: ## Run every Go fuzz target (func FuzzX) for FUZZTIME each (default 30s); crashers land in the package's testdata/fuzz, which make test replays
	@for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' pkg services provider sandbox | xargs -n1 dirname | sort -u); do \
	  for target in $$(go test -list '^Fuzz' ./$$dir | grep '^Fuzz'); do \
	    echo "== ./$$dir $$target"; go test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) ./$$dir; \
	  done; \
	done

bench: ## Measure ingest, the relay and the whole pipeline beside their PostgreSQL and SQS ceilings; writes bench/results.json, bench/README.md and its plots (flags via ARGS)
	$(STACK_ENV); go run ./test/e2e/cmd/bench $(ARGS)

bench-readme: ## Rewrite bench/README.md from bench/results.json without running the bench
	go run ./test/e2e/cmd/bench -readme-only

soak: ## Run the whole pipeline steadily for many documents, retention on (default 1,000,000 at 100/s, hours): CPU and WAL per document, table sizes, reconciler run time, p50/p99 per window and a flatness verdict; writes soak/results.json, soak/*.png and soak/README.md, and soak/partial.json after each window until then (flags via ARGS, e.g. ARGS="-documents 6000 -window 2000 -rate 50")
	$(STACK_ENV); go run ./test/e2e/cmd/soak $(ARGS)

soak-readme: ## Judge the run in soak/results.json again by the current method and rewrite it, soak/README.md and its plots, without running
	go run ./test/e2e/cmd/soak -readme-only

chaos: ## The exactly-once proof under kills, outages and business faults (cases closed by the harness as an operator); flags via ARGS, e.g. make chaos ARGS="-psps dlocal,stripe,mercadopago -payments 10000 -kills 50 -mismatch-share 0.02"
	scripts/stack.sh install
	go run ./test/e2e/cmd/chaos $(ARGS)

demo: ## Run the whole pipeline locally on a few demo payments and print a summary (ARGS=-serve keeps it up)
	$(STACK_ENV); go run ./test/e2e/cmd/demo $(ARGS)

up: ## Start PostgreSQL and fauxqs (when not already running)
	scripts/stack.sh up

down: ## Stop what `make up` started
	scripts/stack.sh down
