# Concierge. Quickstart: `make run` (the service with a seeded demo workspace)
# and `make test` (the whole suite, on real PostgreSQL and Redis, with -race).

GO        ?= go
PKGS      ?= ./...
TEST_FLAGS ?= -race -count=1 -timeout 14m
BIN       := bin

.PHONY: run test bench eval build lint services mock-llm browser screenshots fmt clean

## run: start PostgreSQL/Redis if needed, then Concierge in dev mode (API + worker + demo data)
run: services
	$(GO) run ./app/concierge dev

## test: the whole test suite with the race detector, then every fuzz
## target for FUZZTIME (default 5s) each (scripts/fuzz.sh)
test: services mock-llm browser
	$(GO) vet $(PKGS)
	$(GO) test $(TEST_FLAGS) $(PKGS)
	GO=$(GO) bash scripts/fuzz.sh

## bench: load benchmarks against real PostgreSQL/Redis, each paired with a
## baseline in the same run; figures and method in docs/benchmarks.md
BENCH ?= .
bench: services
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime 1x -timeout 30m ./app/concierge/

## eval: retrieval quality on the shipped evaluation set (testdata/eval):
## recall@1, recall@5 and MRR for keyword, vector and hybrid retrieval, and
## the fallback rate on unanswerable questions (also part of make test)
eval: services
	$(GO) test -count=1 -run '^TestRetrievalQuality$$' -v ./app/concierge/ | grep -v '^=== RUN'

## build: the two binaries into ./bin
build:
	$(GO) build -trimpath -o $(BIN)/ ./app/concierge ./app/conciergectl

## lint: formatting and vet
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

## mock-llm: install the pinned OpenAI-compatible mock server (tools/mock-llm) for the LLM adapter's contract tests
mock-llm:
	@bash scripts/mock-llm.sh

## browser: install Debian's chromium (apt) and the pinned playwright-core (tools/browser) for the widget's browser tests
browser:
	@bash scripts/browser.sh

## screenshots: run the widget's browser tests and keep their screenshots in docs/widget
screenshots: services browser
	WIDGET_SCREENSHOT_DIR=$(CURDIR)/docs/widget $(GO) test -count=1 -run '^TestWidgetInBrowser$$' -v ./app/concierge/

## services: make sure PostgreSQL and Redis are running
services:
	@bash scripts/services.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)
