# From mruby 3.1.0 (Debian source package mruby_3.1.0-3), test/t/class.rb: a few assert blocks.
assert('Class', '15.2.3') do
  assert_equal(Class, Class.class)
end
assert('Class 3') do
  class C3; end
  assert_equal(Class, C3.new.class.class)
end
assert('Class Module 1') do
  module M; end
  assert_equal(Module, M.class)
end
assert('Class Nested 6') do
  class A; end
  class A::B; end
  class A::B::C; end
  assert_equal(A::B::C, A::B::C.new.class)
end
assert('Class Dup 2') do
  module M; end
  assert_equal(Module, M.dup.class)
end
assert('clone Class') do
  class Foo
    def func
      true
    end
  end

  assert_true(Foo.clone.new.func)
end
assert('class variable for frozen class/module') do
  module CVarForFrozenModule
    freeze
    assert_raise(FrozenError) { @@cv = 1 }
  end

  class CVarForFrozenClassA
    @@a = nil
    freeze
  end
  class CVarForFrozenClassB < CVarForFrozenClassA
    def a=(v)
      @@a = v
    end
  end
  b = CVarForFrozenClassB.new
  assert_raise(FrozenError) { b.a = 1 }
end
