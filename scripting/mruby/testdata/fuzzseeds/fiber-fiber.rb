# From mruby 3.1.0 (Debian source package mruby_3.1.0-3), mrbgems/mruby-fiber/test/fiber.rb: a few assert blocks.
assert('Fiber.new') do
  f = Fiber.new{}
  assert_kind_of Fiber, f
end
assert('Fiber#alive?') do
  f = Fiber.new{ Fiber.yield }
  f.resume
  assert_true f.alive?
  f.resume
  assert_false f.alive?
end
assert('FiberError') do
  assert_equal StandardError, FiberError.superclass
end
assert('Yield raises when called on root fiber') do
  assert_raise(FiberError) { Fiber.yield }
end
assert('Root fiber resume') do
  root = Fiber.current
  assert_raise(FiberError) { root.resume }
  f = Fiber.new {
    assert_raise(FiberError) { root.resume }
  }
  f.resume
  assert_false f.alive?
end
assert('Resume transferred fiber') do
  f = Fiber.new {
    assert_raise(FiberError) { f.resume }
  }
  f.transfer
end
assert('CRuby Fiber#transfer test.') do
  ary = []
  f2 = nil
  f1 = Fiber.new{
    ary << f2.transfer(:foo)
    :ok
  }
  f2 = Fiber.new{
    ary << f1.transfer(:baz)
    :ng
  }
  assert_equal :ok, f1.transfer
  assert_equal [:baz], ary
end
