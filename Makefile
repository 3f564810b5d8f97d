# Concierge. Quickstart: `make run` (the service with a seeded demo workspace)
# and `make test` (the whole suite, on real PostgreSQL and Redis, with -race).

GO        ?= go
PKGS      ?= ./...
# -timeout is per test process; it stops a hung test, it is not the suite's budget (15 min on 2 cores,
# measured in docs/benchmarks.md): the slowest shard took 776 s on 2026-11-28.
TEST_FLAGS ?= -race -count=1 -timeout 25m
BIN       := bin

.PHONY: run test bench eval synonyms build lint services mock-llm mailpit browser promtool screenshots fmt clean

## run: start PostgreSQL/Redis if needed, then Concierge in dev mode (API + worker + demo data)
run: services
	$(GO) run ./app/concierge dev

## test: the whole test suite with the race detector (scripts/test.sh: the
## end-to-end package's test binary built once and run in three shards
## beside the other packages, then every
## fuzz target for FUZZTIME (default 5s) each (scripts/fuzz.sh) while the
## shards finish)
test: services mock-llm mailpit browser promtool
	$(GO) vet $(PKGS)
	GO=$(GO) TEST_FLAGS="$(TEST_FLAGS)" bash scripts/test.sh

## bench: load benchmarks against real PostgreSQL/Redis, each paired with a
## baseline in the same run; figures and method in docs/benchmarks.md
BENCH ?= .
bench: services
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime 1x -timeout 30m ./app/concierge/
	CONCIERGE_SCALE_SEARCH=1 $(GO) test -count=1 -v -run '^TestSearchConversationsScales$$' -timeout 30m ./adapters/postgres/

## eval: answer quality on the evaluation sets in testdata/eval, per set and
## tuning/held-out half: recall@1, recall@5 and MRR for a plain BM25 floor,
## keyword, vector, hybrid and hybrid + rerank; the answerability decision;
## and end to end through POST /api/v2/chat, the shares of questions answered,
## falling back and answered with the evidence (also part of make test).
## EVAL_SPLIT=tuning hides the held-out halves while tuning; EVAL_FIT=1 refits
## the reranker on the tuning halves; EVAL_THRESHOLD=x measures another threshold.
## EVAL_CONCIERGE_X=v runs the end-to-end half with CONCIERGE_X=v (a real model,
## embedder or index-time questions; docs/benchmarks.md, round 6).
eval: services
	$(GO) test -count=1 -run '^(TestRetrievalQuality|TestAnswerQuality)$$' -v ./app/concierge/ | grep -v '^=== RUN'

## build: the two binaries into ./bin
build:
	$(GO) build -trimpath -o $(BIN)/ ./app/concierge ./app/conciergectl

## lint: formatting and vet
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

## synonyms: regenerate the embedded synonym table and word list (adapters/retrieval/synonyms)
## from WordNet 3.0, installing Debian's wordnet-base when it is missing; the
## files are committed, so building Concierge never needs this
synonyms:
	@test -f /usr/share/wordnet/data.noun || apt-get install -y wordnet-base
	$(GO) run ./tools/wordnet-synonyms -wordnet /usr/share/wordnet -out adapters/retrieval/synonyms/wordnet.txt.gz -words adapters/retrieval/synonyms/words.txt.gz

## mock-llm: install the pinned OpenAI-compatible mock server (tools/mock-llm) for the LLM adapter's contract tests
mock-llm:
	@bash scripts/mock-llm.sh

## mailpit: install the pinned SMTP test server (into the user cache directory) for the mail adapter's tests
mailpit:
	@GO=$(GO) bash scripts/mailpit.sh

## browser: install Debian's chromium (apt) and the pinned playwright-core (tools/browser) for the widget's and the console's browser tests
browser:
	@bash scripts/browser.sh

## promtool: install Debian's prometheus package (apt) for promtool, which checks and unit-tests
## the alert rules (deployments/alerts_test.go; skipped without it, failing under CI=true)
promtool:
	@bash scripts/promtool.sh

## screenshots: run the widget's, the console's, the inbox's, the reports' and the unanswered topics'
## browser tests and keep their screenshots in docs/widget and docs/console
screenshots: services browser
	WIDGET_SCREENSHOT_DIR=$(CURDIR)/docs/widget CONSOLE_SCREENSHOT_DIR=$(CURDIR)/docs/console \
		$(GO) test -count=1 -run '^(TestWidgetInBrowser|TestConsoleInBrowser|TestInboxInBrowser|TestReportsInBrowser|TestUnansweredInBrowser)$$' -v ./app/concierge/

## services: make sure PostgreSQL and Redis are running
services:
	@bash scripts/services.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)
