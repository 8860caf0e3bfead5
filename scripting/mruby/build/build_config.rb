# hostd's mruby build configuration (mruby 3.1.0, Debian source package).
#
# Used by scripting/mruby/build/build-libmruby.sh through mk/mruby.mk
# (`make libmruby`); not for use on its own. It builds only libmruby.a:
# no bin tools, no test runner.
#
# HOSTD_DEFINES below must match the -D flags of the #cgo CFLAGS line in
# scripting/mruby/engine.go (cgoDefines) exactly: MRB_USE_DEBUG_HOOK and the other
# defines change the layout of mrb_state and friends. The build writes them
# to build/mruby/cflags and a test in scripting/mruby compares the two.

# No build_config.rb.lock next to this file: the source is pinned by
# Debian's package, and there are no git gems.
MRuby::Lockfile.disable

HOSTD_DEFINES = %w(
  MRB_USE_DEBUG_HOOK
  MRB_UTF8_STRING
  MRB_NO_STDIO
).freeze

# The build tool: mrbc compiles the gems' Ruby parts for the hostd build.
# It needs stdio, so it gets its own build (named 'host', where the hostd
# build looks for mrbc); nothing of it goes into build/mruby.
MRuby::Build.new('host') do |conf|
  conf.toolchain :gcc
  conf.cc.flags = %w(-std=gnu99 -O2 -Wall)
  conf.gem core: 'mruby-bin-mrbc'
end

MRuby::Build.new('hostd') do |conf|
  conf.toolchain :gcc

  # -O2 -fPIC for every C file; no -g (the library stays small), and no
  # CFLAGS from the environment (the cgo side must see the same defines).
  conf.cc.flags = %w(-std=gnu99 -O2 -fPIC -Wall -Wundef
                     -Werror-implicit-function-declaration -Wwrite-strings)
  conf.cc.defines += HOSTD_DEFINES
  conf.linker.flags = []

  # Gems chosen for request hooks. Core language extensions and stdlib
  # classes that do not touch the outside world.
  #
  # Deliberately NOT built in:
  #   mruby-io, mruby-socket  file descriptors and sockets of the server
  #                           process (IO.for_fd, File.open, TCPSocket ...)
  #                           and backticks / IO.popen, which fork
  #   mruby-sleep             blocks the tenant's thread; the debug hook
  #                           cannot interrupt it
  #   mruby-exit              Kernel#exit would end the server
  #   mruby-print             Kernel#puts/print/p write to the server's
  #                           stdout (hooks use r.puts / Hostd.log)
  #   mruby-objectspace       ObjectSpace.each_object would reach objects
  #                           left over from earlier requests
  #   mruby-os-memsize, mruby-binding*, mruby-toplevel-ext,
  #   mruby-complex, mruby-cmath, mruby-bin-*, mruby-test
  #
  # MRB_NO_STDIO: nothing in libmruby writes to the server's stdout or
  # stderr (warnings, code generator errors, mrb_p ...).
  %w(
    mruby-compiler
    mruby-error
    mruby-compar-ext
    mruby-enum-ext
    mruby-string-ext
    mruby-numeric-ext
    mruby-array-ext
    mruby-hash-ext
    mruby-range-ext
    mruby-proc-ext
    mruby-symbol-ext
    mruby-object-ext
    mruby-kernel-ext
    mruby-class-ext
    mruby-fiber
    mruby-enumerator
    mruby-enum-lazy
    mruby-enum-chain
    mruby-catch
    mruby-pack
    mruby-sprintf
    mruby-time
    mruby-struct
    mruby-random
    mruby-math
    mruby-rational
    mruby-metaprog
    mruby-method
    mruby-eval
  ).each { |g| conf.gem core: g }

  # Write the defines for the cgo side (build/mruby/cflags).
  if (out = ENV['HOSTD_MRUBY_CFLAGS_FILE'])
    File.write(out, HOSTD_DEFINES.map { |d| "-D#{d}" }.join(' ') + "\n")
  end
end
