# Barrage's tasks. `make help` lists them.

GO      ?= go
# The Go release every target builds and checks with: the go command fetches it from the module
# proxy once (about 76 MB). A machine's own Go 1.26.8 builds the code too, but its standard
# library has vulnerabilities that make vulncheck reports (net/http, crypto/tls, crypto/x509).
GO_TOOLCHAIN ?= go1.27.3
export GOTOOLCHAIN := $(GO_TOOLCHAIN)
TOOLS   := $(GO) tool -modfile=tools/go.mod
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REDOC_VERSION ?= 2.5.4
UPLOT_VERSION ?= 1.6.32
AXE_VERSION ?= 4.14.1
GENERATED := api internal/postgres/dbsqlc sdk/proto sdk/python/barrage_plugin/v1 internal/portal/dist

.DEFAULT_GOAL := help
.PHONY: help run build test generate portal portal-screenshots verify lint vulncheck contract k8s-check bench bench-smoke docs-assets report-assets axe-assets clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: ## serve on http://127.0.0.1:8080 with the shared demo agent and the demo shop beside it (127.0.0.1:8081), and an embedded PostgreSQL when DATABASE_URL is empty
	$(GO) build -o bin/barrage ./cmd/barrage
	@# exec: Ctrl-C stops serve, which exits 0, and make says nothing more (go run would exit 1);
	@# the shop, in the same process group, stops with it
	bin/barrage demo-shop --addr 127.0.0.1:8081 & exec bin/barrage serve --demo-agent

build: ## build a static bin/barrage
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o bin/barrage ./cmd/barrage

test: ## run every test; needs no PostgreSQL (TEST_DATABASE_URL, Docker, else an embedded one); the portal's screenshots go to $BARRAGE_ARTIFACTS/portal
	@# Each end-to-end suite (cmd/barrage/e2e/...) is a package of its own, and they mostly wait on
	@# processes: three packages at once fill two cores (on 2 cores: 2 at once 7:24, 3 at once 5:38 with
	@# every package under 2 minutes, 4 at once 5:31 with two suites past 2 minutes).
	$(GO) test -race -count=1 -p 3 -timeout 30m ./...
	cd sdk && $(GO) test -race -count=1 ./...

generate: portal ## regenerate the oapi-codegen, sqlc and protobuf code (Go and Python), and the portal's bundle
	$(GO) generate ./api ./internal/postgres
	cd sdk && $(GO) generate .
	sdk/python/generate.sh

portal: ## check and unit-test the portal (web/), then build it into internal/portal/dist, which serve embeds; needs Node and npm, from the registry
	scripts/need.sh portal node:nodejs npm
	cd web && npm ci --no-audit --no-fund --loglevel=error && npx tsc --noEmit -p . && node test.mjs && node build.mjs

# The pages docs/portal.md shows, by the names the browser tests give their screenshots.
PORTAL_SHOTS = signin signup tests wizard-picked editor-error test test-trend debug launch live live-lost run run-baseline compare sweep runs license tokens password \
	marketplace plugin namespace-pending wizard-plugin review admin-invitations admin-user admin-agents admin-targets projects project

portal-screenshots: ## the portal's browser tests, keeping each page's 1280 px screenshot in docs/portal/ (docs/portal.md shows them)
	rm -rf .shots && mkdir .shots
	BARRAGE_ARTIFACTS=$(CURDIR)/.shots BARRAGE_REQUIRE_CHROMIUM=1 $(GO) test -count=1 -run 'TestPortal(TesterJourney|AccountPages)InChromium|TestThe(Marketplace|AdminConsole)InChromium|TestProjectsInChromium|TestBaselinesAndTrendsInChromium' ./cmd/barrage/e2e/portal ./cmd/barrage/e2e/journey ./cmd/barrage/e2e/market
	mkdir -p docs/portal && rm -f docs/portal/*.png
	for p in $(PORTAL_SHOTS); do cp .shots/portal/*/$$p-1280.png docs/portal/$$p.png; done
	rm -rf .shots

verify: generate ## regenerate and fail if the generated code or go.mod differ from what is committed
	$(GO) mod tidy -diff
	@# tools/buf is not tidied: buf's own tests need modules the proxy does not serve.
	cd tools && $(GO) mod tidy -diff
	cd sdk && $(GO) mod tidy -diff
	cd sdk && $(GO) tool -modfile=../tools/buf/go.mod buf lint
	@git diff --exit-code -- $(GENERATED) || (echo "generated code is stale: run make generate and commit" && exit 1)
	@test -z "$$(git status --porcelain -- $(GENERATED))" || (git status --porcelain -- $(GENERATED); echo "untracked generated files: commit them" && exit 1)

# sloglint: attributes only (slog.String(...), never loose key-value pairs), snake_case keys, and
# no global logger: every component logs through the logger it was given.
SLOGLINT_FLAGS := -attr-only -key-naming-case=snake -no-global=all

lint: ## go vet, gofmt, staticcheck, errorlint, testifylint and sloglint
	$(GO) vet ./...
	cd sdk && $(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "run gofmt -w" && exit 1)
	$(TOOLS) staticcheck ./...
	cd sdk && $(GO) tool -modfile=../tools/go.mod staticcheck ./...
	$(TOOLS) go-errorlint ./...
	cd sdk && $(GO) tool -modfile=../tools/go.mod go-errorlint ./...
	$(TOOLS) testifylint ./...
	cd sdk && $(GO) tool -modfile=../tools/go.mod testifylint ./...
	$(TOOLS) sloglint $(SLOGLINT_FLAGS) ./...
	cd sdk && $(GO) tool -modfile=../tools/go.mod sloglint $(SLOGLINT_FLAGS) ./...

vulncheck: ## govulncheck against Go's vulnerability database, read from the module proxy (no vuln.go.dev needed)
	scripts/govulncheck.sh

contract: ## schemathesis over /openapi.yaml against a fresh server, as a user and as an admin (root: a loopback-only network namespace)
	scripts/schemathesis.sh

k8s-check: ## validate deploy/kubernetes with kubeconform, offline (schemas from PyPI's kubernetes-validate, cached)
	scripts/kubeconform.sh

bench: ## Go benchmarks, then the API under wrk, barrage run against wrk and k6 on nginx, decoding gzip against k6, runs through the server, a thousand agents on one server (INGEST_AGENTS=100 for a shorter bench), one user's imports against another's latency, the portal's live page with 100 requests for 10 minutes
	$(GO) test -run '^$$' -bench . -benchmem ./...
	scripts/bench-api.sh
	scripts/bench-engine.sh
	scripts/bench-compression.sh
	scripts/bench-runs.sh
	scripts/bench-ingest.sh $(INGEST_AGENTS)
	scripts/bench-fairshare.sh
	scripts/bench-portal.sh

bench-smoke: ## every bench once, in seconds, failing unless each prints its figures (CI runs it; the figures mean nothing)
	scripts/bench-smoke.sh

docs-assets: ## refresh the embedded Redoc bundle from npm (REDOC_VERSION=x.y.z)
	rm -rf .redoc && mkdir .redoc && cd .redoc && npm pack redoc@$(REDOC_VERSION) --silent >/dev/null && tar xzf redoc-$(REDOC_VERSION).tgz
	cp .redoc/package/bundles/redoc.standalone.js .redoc/package/bundles/redoc.standalone.js.LICENSE.txt internal/httpapi/docs/
	cp .redoc/package/LICENSE internal/httpapi/docs/REDOC-LICENSE
	rm -rf .redoc

report-assets: ## refresh the reports' embedded uPlot from npm (UPLOT_VERSION=x.y.z)
	rm -rf .uplot && mkdir .uplot && cd .uplot && npm pack uplot@$(UPLOT_VERSION) --silent >/dev/null && tar xzf uplot-$(UPLOT_VERSION).tgz
	cp .uplot/package/dist/uPlot.iife.min.js .uplot/package/dist/uPlot.min.css internal/report/assets/
	cp .uplot/package/LICENSE internal/report/assets/UPLOT-LICENSE
	rm -rf .uplot

axe-assets: ## refresh the portal's browser tests' axe-core from npm (AXE_VERSION=x.y.z)
	rm -rf .axe && mkdir .axe && cd .axe && npm pack axe-core@$(AXE_VERSION) --silent >/dev/null && tar xzf axe-core-$(AXE_VERSION).tgz
	cp .axe/package/axe.min.js internal/portal/portaltest/testdata/
	cp .axe/package/LICENSE internal/portal/portaltest/testdata/AXE-LICENSE
	cp .axe/package/LICENSE-3RD-PARTY.txt internal/portal/portaltest/testdata/AXE-LICENSE-3RD-PARTY.txt
	rm -rf .axe

clean: ## remove build output (keeps the .barrage data folder)
	rm -rf bin
