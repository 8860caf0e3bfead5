#!/bin/sh
# build-libmruby.sh OUT_DIR: builds libmruby 3.1.0 for hostd into OUT_DIR
# (normally build/mruby): OUT_DIR/lib/libmruby.a, OUT_DIR/include/,
# OUT_DIR/cflags (the -D flags the library was built with).
#
# The source is Debian's mruby source package, fetched with `apt-get source`
# through a private apt configuration under OUT_DIR/apt (deb-src entries
# derived from the machine's own apt sources; the system's apt configuration
# is not touched and signature verification stays on). hostd's own patch
# series, scripting/mruby/build/patches/*.patch (memory-safety fixes ported
# from upstream mruby, linear string search; see docs/mruby.md), is applied
# in order to a copy of it (OUT_DIR/patched) after Debian's patches; a patch
# that does not apply stops the build. The build uses
# scripting/mruby/build/build_config.rb. Run through mk/mruby.mk
# (`make libmruby`), which skips it when the library exists.
#
# Needs: ruby rake bison gcc libc6-dev dpkg-dev patch (installed with apt-get when
# missing and running as root).
set -eu

MRUBY_UPSTREAM=3.1.0
PACKAGES="ruby rake bison gcc libc6-dev dpkg-dev patch"

die() { echo "build-libmruby: $*" >&2; exit 1; }
log() { echo "build-libmruby: $*" >&2; }

[ $# -eq 1 ] || die "usage: $0 OUT_DIR"
mkdir -p "$1"
out=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
config="$here/build_config.rb"
[ -f "$config" ] || die "missing $config"

# 1. Build tools.
missing=""
for tool in ruby rake bison gcc ar dpkg-source patch; do
	command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		die "missing tools:$missing; install the Debian packages: apt-get install $PACKAGES"
	fi
	log "installing $PACKAGES (missing:$missing)"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y --no-install-recommends $PACKAGES; then
		apt-get update
		apt-get install -y --no-install-recommends $PACKAGES
	fi
fi

# 2. Source package, through a private apt configuration.
srcroot="$out/src"
srcdir="$srcroot/mruby-$MRUBY_UPSTREAM"
if [ ! -f "$srcdir/.hostd-complete" ]; then
	aptdir="$out/apt"
	rm -rf "$aptdir" "$srcroot"
	mkdir -p "$aptdir/sources.list.d" "$aptdir/lists/partial" \
		"$aptdir/cache/archives/partial" "$srcroot"
	: >"$aptdir/sources.list"
	# deb-src entries: the same mirrors, suites, components and keys as the
	# machine's own binary entries. HOSTD_APT_SOURCES may name another
	# deb822 .sources file to derive them from.
	sources="${HOSTD_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}"
	if [ -f "$sources" ]; then
		sed 's/^Types:.*/Types: deb-src/' "$sources" >"$aptdir/sources.list.d/hostd-src.sources"
	elif [ -f /etc/apt/sources.list ]; then
		sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' /etc/apt/sources.list >"$aptdir/sources.list"
	else
		die "no apt sources found ($sources, /etc/apt/sources.list)"
	fi
	cat >"$aptdir/apt.conf" <<CONF
Dir::Etc::sourcelist "$aptdir/sources.list";
Dir::Etc::sourceparts "$aptdir/sources.list.d";
Dir::State::Lists "$aptdir/lists";
Dir::Cache "$aptdir/cache";
Dir::Cache::archives "$aptdir/cache/archives";
Acquire::AllowInsecureRepositories "false";
Acquire::AllowDowngradeToInsecureRepositories "false";
APT::Get::AllowUnauthenticated "false";
CONF
	export APT_CONFIG="$aptdir/apt.conf"
	log "apt-get update (private lists in $aptdir/lists)"
	apt-get -q update
	# The _apt sandbox user downloads into the current directory.
	if getent passwd _apt >/dev/null 2>&1; then chown _apt "$srcroot"; fi
	log "apt-get source mruby"
	(cd "$srcroot" && apt-get -q source --only-source mruby)
	[ -d "$srcdir" ] || die "the apt mirror's mruby source is not upstream $MRUBY_UPSTREAM: $(ls "$srcroot")"
	touch "$srcdir/.hostd-complete"
	unset APT_CONFIG
fi

# 3. hostd's patches, on a fresh copy of the source.
patched="$out/patched"
rm -rf "$patched"
cp -R "$srcdir" "$patched"
rm -f "$patched/.hostd-complete"
for p in "$here"/patches/*.patch; do
	[ -f "$p" ] || continue
	log "applying $(basename "$p")"
	patch -d "$patched" -p1 --batch --forward --no-backup-if-mismatch -s <"$p" ||
		die "$(basename "$p") does not apply to the mruby source in $srcdir"
done

# 4. Build. CFLAGS/LDFLAGS from the environment are not used (build_config.rb
# sets the flags), so the library matches the cgo side's defines.
work="$out/work"
rm -rf "$work"
log "building libmruby in $work"
jobs=$(nproc 2>/dev/null || echo 2)
(
	cd "$patched"
	unset CFLAGS CXXFLAGS LDFLAGS DEB_TARGET_ARCH
	export MRUBY_CONFIG="$config" MRUBY_BUILD_DIR="$work" \
		HOSTD_MRUBY_CFLAGS_FILE="$out/cflags.tmp"
	# The presym headers first: mruby 3.1's parallel build can compile
	# the parser before they exist.
	rake gensym
	rake -m -j"$jobs" all
)
lib="$work/hostd/lib/libmruby.a"
[ -f "$lib" ] || die "rake did not produce $lib"

# 5. Install: headers and cflags first, the library last (its presence
# marks a complete build for make).
rm -rf "$out/include" "$out/lib"
mkdir -p "$out/include" "$out/lib"
cp -R "$patched/include/." "$out/include/"
# The parser's node types, to tell an explicit top-level `return` (see
# hostd_mruby.c).
cp "$patched/mrbgems/mruby-compiler/core/node.h" "$out/include/hostd_mruby_node.h"
mv "$out/cflags.tmp" "$out/cflags"
{
	ls "$srcroot"/*.dsc | sed 's,.*/,,'
	for p in "$here"/patches/*.patch; do [ -f "$p" ] && basename "$p"; done
} >"$out/SOURCE"
cp "$lib" "$out/lib/libmruby.a.tmp"
mv "$out/lib/libmruby.a.tmp" "$out/lib/libmruby.a"
log "done: $out/lib/libmruby.a ($(cat "$out/cflags"))"
