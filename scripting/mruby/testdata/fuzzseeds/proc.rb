# From mruby 3.1.0 (Debian source package mruby_3.1.0-3), test/t/proc.rb: a few assert blocks.
assert('Proc', '15.2.17') do
  assert_equal Class, Proc.class
end
assert('Proc.new', '15.2.17.3.1') do
  assert_raise ArgumentError do
    Proc.new
  end

  assert_equal (Proc.new {}).class, Proc

  assert_raise LocalJumpError do
    Proc.new{ break }.call
  end
end
assert('Proc#[]', '15.2.17.4.1') do
  a = 0
  b = Proc.new { a += 1 }
  b.[]

  a2 = 0
  b2 = Proc.new { |i| a2 += i }
  b2.[](5)

  assert_equal 1, a
  assert_equal 5, a2
end
assert('Proc#arity', '15.2.17.4.2') do
  a = Proc.new {|x, y|}.arity
  b = Proc.new {|x, *y, z|}.arity
  c = Proc.new {|x=0, y|}.arity
  d = Proc.new {|(x, y), z=0|}.arity

  assert_equal  2, a
  assert_equal(-3, b)
  assert_equal  1, c
  assert_equal  1, d

  e = ->(x=0, y){}.arity
  f = ->((x, y), z=0){}.arity
  g = ->(x=0){}.arity

  assert_equal(-2, e)
  assert_equal(-2, f)
  assert_equal(-1, g)
end
assert('Proc#call', '15.2.17.4.3') do
  a = 0
  b = Proc.new { a += 1 }
  b.call

  a2 = 0
  b2 = Proc.new { |i| a2 += i }
  b2.call(5)

  assert_equal 1, a
  assert_equal 5, a2
end
