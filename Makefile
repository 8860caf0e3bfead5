# hostd — see README.md. `make demo` sets up and serves the examples;
# `make test` runs the tests.

GO       ?= go
BIN      := bin/hostd
# Debian packages the build, the tests and the demo need. Installed by
# `make deps` when missing (root, apt).
APT_PKGS ?= ca-certificates curl openssl make gcc libc6-dev ruby rake bison dpkg-dev perl php-cgi php8.2-fpm redis-server memcached pebble \
	systemd util-linux logrotate prometheus testssl.sh

export PATH := $(PATH):/usr/local/go/bin

include mk/mruby.mk

# Everything that compiles the cgo mruby binding needs libmruby first;
# `make build GOFLAGS=-tags=nomruby` builds a pure-Go binary without it.
BUILD_DEPS := $(if $(findstring nomruby,$(GOFLAGS)),,libmruby)

# What `hostd version` shows besides what the toolchain stamps with
# -buildvcs (which does not see git worktrees): the commit, "+dirty" with
# uncommitted changes, and the build time.
REVISION   := $(shell r=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || r=$$r+dirty; echo $$r; })
BUILD_TIME := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
GO_LDFLAGS := -X main.buildRevision=$(REVISION) -X main.buildTime=$(BUILD_TIME)

# make install: DESTDIR for staging, PREFIX for the binary.
DESTDIR ?=
PREFIX  ?= /usr/local

.PHONY: all build test test-short test-deps vet bench bench-peers-deps demo demo-services deps clean install fuzz

all: build

# apt_install installs those of the Debian packages $(1) that are
# missing (as root; apt-get update first).
define apt_install
missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "run as root to install:$$missing" >&2; exit 1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
endef

deps:
	@$(call apt_install,$(APT_PKGS))

build: $(BUILD_DEPS)
	$(GO) build -buildvcs=auto -ldflags '$(GO_LDFLAGS)' -o $(BIN) ./cmd/hostd

# The binary, the systemd unit, the logrotate snippet, a /etc/hostd
# skeleton (never overwriting an existing configuration) and the state and
# log directories (root-only). Then: systemctl daemon-reload; systemctl
# enable --now hostd (docs/operations.md).
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/hostd
	install -D -m 0644 examples/systemd/hostd.service $(DESTDIR)/etc/systemd/system/hostd.service
	sed -i 's|/usr/local/bin/hostd|$(PREFIX)/bin/hostd|g' $(DESTDIR)/etc/systemd/system/hostd.service
	install -D -m 0644 examples/systemd/hostd.logrotate $(DESTDIR)/etc/logrotate.d/hostd
	sed -i 's|/usr/local/bin/hostd|$(PREFIX)/bin/hostd|g' $(DESTDIR)/etc/logrotate.d/hostd
	install -d -m 0755 $(DESTDIR)/etc/hostd $(DESTDIR)/etc/hostd/vhosts.d $(DESTDIR)/etc/hostd/hooks
	test -e $(DESTDIR)/etc/hostd/hostd.toml || install -m 0644 examples/systemd/hostd.toml $(DESTDIR)/etc/hostd/hostd.toml
	test -n "$$(ls $(DESTDIR)/etc/hostd/vhosts.d)" || install -m 0644 examples/systemd/example.toml.disabled $(DESTDIR)/etc/hostd/vhosts.d/example.toml.disabled
	install -d -m 0700 $(DESTDIR)/var/lib/hostd
	install -d -m 0750 $(DESTDIR)/var/log/hostd
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then chown root:root /var/lib/hostd /var/log/hostd; fi

vet: $(BUILD_DEPS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed" >&2; exit 1; }
	$(GO) vet ./...

# Tests write configurations and logs under $TMPDIR, and hostd refuses a
# log or configuration path below a directory others can write (a /tmp or
# /var/tmp without its sticky bit, as some shared machines have them): as
# root the tests use a directory of their own, /run/hostd-test (0755).
test: export TMPDIR = $(shell install -d -m 0755 /run/hostd-test 2>/dev/null && echo /run/hostd-test || echo $${TMPDIR:-/tmp})
test: deps test-deps $(BUILD_DEPS) vet
	$(GO) test -race -count=1 -timeout 20m ./...
	@# host's suite again with every client on HTTP/2 (the run above uses
	@# hostd's HTTP/1.1 path for most of it): both transports pass
	HOSTD_TEST_HTTP=h2 $(GO) test -race -count=1 -timeout 20m ./host/
	@# the pure-Go build (no libmruby): builds, and its mruby stub says so
	CGO_ENABLED=0 $(GO) build -tags nomruby -o /dev/null ./cmd/hostd
	CGO_ENABLED=0 $(GO) test -tags nomruby -count=1 ./scripting/mruby ./scripting/engines ./tenant

# A quick loop while editing: no race detector, and -short skips the tests
# that build and run hostd binaries or the external conformance tools
# (h2spec, testssl.sh). Not a substitute for `make test` (CI runs that).
test-short: export TMPDIR = $(shell install -d -m 0755 /run/hostd-test 2>/dev/null && echo /run/hostd-test || echo $${TMPDIR:-/tmp})
test-short: $(BUILD_DEPS)
	$(GO) test -short -count=1 -timeout 20m ./...

# The web servers `hostd bench --peers` compares hostd with (Debian
# packages; their services are not enabled by the bench, which starts and
# stops its own instances). Root, apt.
PEER_PKGS ?= nginx libnginx-mod-http-lua h2o apache2
bench-peers-deps:
	@$(call apt_install,$(PEER_PKGS))

# Go tools the tests run (skipped when missing, except in CI): h2spec.
H2SPEC := $(shell $(GO) env GOPATH)/bin/h2spec
test-deps: $(H2SPEC)
$(H2SPEC):
	GOFLAGS= $(GO) install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible

bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...

# make fuzz: each engine's fuzz targets for FUZZTIME each (`make fuzz
# FUZZTIME=1h`), niced. A target runs hooks in a child process and reports
# a crash or a hang with its input; crashers land in the package's
# testdata/fuzz and `make test` reruns them as regression tests.
FUZZTIME ?= 5m
FUZZ_TARGETS += fuzz-lua fuzz-mruby
.PHONY: $(FUZZ_TARGETS)
fuzz: export TMPDIR = $(shell install -d -m 0755 /run/hostd-test 2>/dev/null && echo /run/hostd-test || echo $${TMPDIR:-/tmp})
fuzz: $(FUZZ_TARGETS)

fuzz-lua:
	nice -n 19 $(GO) test -run '^$$' -fuzz '^FuzzLuaHook$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./scripting/lua/

fuzz-mruby: $(BUILD_DEPS)
	nice -n 19 $(GO) test -run '^$$' -fuzz '^FuzzMrubyHook$$' -fuzztime $(FUZZTIME) -timeout 0 ./scripting/mruby
	nice -n 19 $(GO) test -run '^$$' -fuzz '^FuzzMrubyCalls$$' -fuzztime $(FUZZTIME) -timeout 0 ./scripting/mruby

# The parsers' fuzz targets, in-process, PARSER_FUZZTIME each: the TOML
# loader, the CGI response parser, Lua patterns and mruby's value codec.
# `make test` runs their seed corpora (f.Add and testdata/fuzz).
PARSER_FUZZTIME ?= 1m
FUZZ_TARGETS += fuzz-parsers
.PHONY: fuzz-parsers
fuzz-parsers: $(BUILD_DEPS)
	nice -n 19 $(GO) test -run '^$$' -fuzz '^FuzzLoadVHost$$' -fuzztime $(PARSER_FUZZTIME) ./tenant
	nice -n 19 $(GO) test -run '^$$' -fuzz '^FuzzReadResponse$$' -fuzztime $(PARSER_FUZZTIME) ./host/cgi
	nice -n 19 $(GO) test -run '^$$' -fuzz '^FuzzLuaPattern$$' -fuzztime $(PARSER_FUZZTIME) ./scripting/lua
	nice -n 19 $(GO) test -run '^$$' -fuzz '^FuzzValueCodec$$' -fuzztime $(PARSER_FUZZTIME) ./scripting/mruby

# services the demo uses: Redis for sessions (and memcached, for trying
# store = "memcached"), on loopback, started once. The demo's Redis
# (port 6380) requires a password that make generates into
# examples/state/redis.pass (root, 0600): hostd reads it (password_file),
# the tenants' code cannot, so it cannot even connect.
DEMO_REDIS_PASS := examples/state/redis.pass
demo-services:
	@install -d -m 0700 examples/state
	@test -s $(DEMO_REDIS_PASS) || (umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > $(DEMO_REDIS_PASS))
	@REDISCLI_AUTH="$$(cat $(DEMO_REDIS_PASS))" redis-cli -h 127.0.0.1 -p 6380 ping 2>/dev/null | grep -q PONG || \
		printf 'bind 127.0.0.1\nport 6380\nsave ""\nappendonly no\ndaemonize yes\nrequirepass %s\n' "$$(cat $(DEMO_REDIS_PASS))" | redis-server -
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
