# The two commands the README promises. Both make sure a Chromium exists first.
GO ?= go

.PHONY: demo test chromium vet bench bench-replay bench-perception bench-pool cross temporal

chromium:
	@scripts/ensure-chromium.sh

## demo: the offline demo (no API key, no network).
demo: chromium
	$(GO) run ./cmd/browseragent demo

## test: the whole test suite against real Chromium, with the race detector.
test: chromium
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 25m ./...
	cd temporal && $(GO) vet ./... && $(GO) test -count=1 -timeout 20m ./...

bench: chromium
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./...

## bench-replay: the demo recorded through `run` against a 1 s/call local
## model server, then replayed; wall times and ratio (docs/performance.md).
bench-replay: chromium
	GO=$(GO) $(GO) run ./cmd/benchreplay

## bench-perception: one observation against the raw capture floor on the
## generated 1k/10k/50k pages, Go's spec and a generated manual, five
## interleaved rounds on one warm Chromium (docs/performance.md). Add
## ARGS=--playwright for Playwright's column (needs node and npm).
bench-perception: chromium
	$(GO) run ./cmd/benchperception $(ARGS)

## bench-pool: the browser pool (package pool) on a scripted sign-up task
## with 1, 4 and 8 concurrent sessions, one Chromium per session against
## one shared Chromium with a browser context per session: runs per minute,
## median run, memory per session (PSS and RSS), as ratios against 1
## session per-session (docs/performance.md, docs/scaling.md). ARGS=--json.
bench-pool: chromium
	$(GO) run ./cmd/benchpool $(ARGS)

## temporal: browseragent and the Temporal add-on browseragent-temporal
## (the separate module temporal/), side by side in bin/: the worker,
## submit and cancel commands run the add-on found next to browseragent,
## then on PATH (docs/scaling.md).
temporal:
	$(GO) build -o bin/browseragent ./cmd/browseragent
	cd temporal && $(GO) build -o ../bin/browseragent-temporal ./cmd/browseragent-temporal

## cross: everything, tests included, builds and vets for Windows and macOS
## (the tests run on Linux only); -exec=/bin/true links each test binary
## without running it.
cross:
	@for target in windows/amd64 darwin/arm64; do \
		echo "cross-OS check: $$target"; \
		GOOS=$${target%/*} GOARCH=$${target#*/} $(GO) vet ./... || exit 1; \
		GOOS=$${target%/*} GOARCH=$${target#*/} $(GO) test -vet=off -exec=/bin/true -count=1 -run XXX ./... >/dev/null || exit 1; \
	done
