# mk/mruby.mk: builds libmruby 3.1.0 for scripting/mruby (cgo) from Debian's
# mruby source package with hostd's patches and build_config.rb. Included by the top
# Makefile; usable alone as `make -f mk/mruby.mk libmruby`.
#
#   make libmruby        build build/mruby/lib/libmruby.a + build/mruby/include
#                        (skipped when present and newer than the build files)
#   make libmruby-clean  remove build/mruby
#
# Needs the Debian packages in MRUBY_DEB_PACKAGES (installed automatically
# when running as root) and the apt mirror; no other network access.
# `go build` with cgo needs the library; `-tags nomruby` builds without it.

MRUBY_MK_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
MRUBY_TOP := $(abspath $(MRUBY_MK_DIR)/..)
MRUBY_OUT := $(MRUBY_TOP)/build/mruby
MRUBY_LIB := $(MRUBY_OUT)/lib/libmruby.a
MRUBY_BUILD_FILES := $(MRUBY_TOP)/scripting/mruby/build/build_config.rb \
	$(MRUBY_TOP)/scripting/mruby/build/build-libmruby.sh \
	$(wildcard $(MRUBY_TOP)/scripting/mruby/build/patches/*.patch)
MRUBY_DEB_PACKAGES := ruby rake bison gcc libc6-dev dpkg-dev

.PHONY: libmruby libmruby-clean

libmruby: $(MRUBY_LIB)

$(MRUBY_LIB): $(MRUBY_BUILD_FILES)
	sh $(MRUBY_TOP)/scripting/mruby/build/build-libmruby.sh $(MRUBY_OUT)

libmruby-clean:
	rm -rf $(MRUBY_OUT)
