# The two commands the README promises. Both make sure a Chromium exists first.
GO ?= go

.PHONY: demo test chromium vet bench

chromium:
	@scripts/ensure-chromium.sh

## demo: the offline demo (no API key, no network).
demo: chromium
	$(GO) run ./cmd/browseragent demo

## test: the whole test suite against real Chromium, with the race detector.
test: chromium
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 25m ./...

bench: chromium
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./...
