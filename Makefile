# hostd — see README.md. `make demo` sets up and serves the examples;
# `make test` runs the tests.

GO       ?= go
BIN      := bin/hostd
# Debian packages the build, the tests and the demo need. Installed by
# `make deps` when missing (root, apt).
APT_PKGS ?= ca-certificates curl openssl make gcc libc6-dev ruby rake bison dpkg-dev perl php-cgi php8.2-fpm redis-server memcached pebble

export PATH := $(PATH):/usr/local/go/bin

include mk/mruby.mk

# Everything that compiles the cgo mruby binding needs libmruby first;
# `make build GOFLAGS=-tags=nomruby` builds a pure-Go binary without it.
BUILD_DEPS := $(if $(findstring nomruby,$(GOFLAGS)),,libmruby)

.PHONY: all build test test-short vet bench demo demo-services deps clean

all: build

deps:
	@missing=""; for p in $(APT_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "run as root to install:$$missing" >&2; exit 1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

build: $(BUILD_DEPS)
	$(GO) build -o $(BIN) ./cmd/hostd

vet: $(BUILD_DEPS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed" >&2; exit 1; }
	$(GO) vet ./...

test: deps $(BUILD_DEPS) vet
	$(GO) test -race -count=1 -timeout 20m ./...
	@# the pure-Go build (no libmruby): builds, and its mruby stub says so
	CGO_ENABLED=0 $(GO) build -tags nomruby -o /dev/null ./cmd/hostd
	CGO_ENABLED=0 $(GO) test -tags nomruby -count=1 ./scripting/mruby ./tenant

bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...

# services the demo uses: Redis for sessions (and memcached, for trying
# store = "memcached"), on loopback, started once.
demo-services:
	@redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || \
		redis-server --bind 127.0.0.1 --port 6379 --save "" --appendonly no --daemonize yes
	@(echo version | timeout 1 bash -c 'cat > /dev/tcp/127.0.0.1/11211') 2>/dev/null || \
		memcached -d -l 127.0.0.1 -p 11211 -u nobody

demo: deps build demo-services
	@# suEXEC runs a CGI script only when its tenant owns it.
	chown -R 31002:31002 examples/tenants/bob/public/cgi
	$(BIN) check --config examples/hostd.toml
	@echo "serving the examples: try"
	@echo "  curl --resolve alice.example:8443:127.0.0.1 -k https://alice.example:8443/"
	@echo "  curl --resolve alice.example:8443:127.0.0.1 -k https://alice.example:8443/hello"
	@echo "  curl --resolve bob.example:8443:127.0.0.1 -k https://bob.example:8443/cgi/hello.cgi"
	@echo "  curl --resolve alice.example:8443:127.0.0.1 -k -c /tmp/jar -b /tmp/jar https://alice.example:8443/visits"
	@echo "  openssl s_client -connect 127.0.0.1:8443 -servername bob.example"
	$(BIN) serve --config examples/hostd.toml

clean:
	rm -rf bin build examples/state
