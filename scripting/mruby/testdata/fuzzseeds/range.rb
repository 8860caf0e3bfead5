# From mruby 3.1.0 (Debian source package mruby_3.1.0-3), test/t/range.rb: a few assert blocks.
assert('Range', '15.2.14') do
  assert_equal Class, Range.class
end
assert('Range#begin', '15.2.14.4.3') do
  assert_equal 1, (1..10).begin
  assert_equal 1, (1..).begin
  assert_nil (..1).begin
end
assert('Range#exclude_end?', '15.2.14.4.6') do
  assert_true (1...10).exclude_end?
  assert_false (1..10).exclude_end?
  assert_true (1...).exclude_end?
  assert_false (1..).exclude_end?
  assert_true (...1).exclude_end?
  assert_false (..1).exclude_end?
end
assert('Range#initialize', '15.2.14.4.9') do
  a = Range.new(1, 10, true)
  b = Range.new(1, 10, false)

  assert_equal (1...10), a
  assert_true a.exclude_end?
  assert_equal (1..10), b
  assert_false b.exclude_end?

  assert_raise(NameError) { (0..1).__send__(:initialize, 1, 3) }

  c = Range.new(1, nil, true)
  d = Range.new(1, nil, false)

  assert_equal (1...nil), c
  assert_true c.exclude_end?
  assert_equal (1..nil), d
  assert_false d.exclude_end?
end
assert('Range#to_s', '15.2.14.4.12') do
  assert_equal "0..1", (0..1).to_s
  assert_equal "0...1", (0...1).to_s
  assert_equal "a..b", ("a".."b").to_s
  assert_equal "a...b", ("a"..."b").to_s
  assert_equal "0..", (0..).to_s
  assert_equal "0...", (0...).to_s
  assert_equal "a..", ("a"..).to_s
  assert_equal "a...", ("a"...).to_s
end
assert('Range#initialize_copy', '15.2.14.4.15') do
  assert_raise(NameError) { (0..1).__send__(:initialize_copy, 1..3) }
end
assert('Range#to_a') do
  assert_equal([1, 2, 3, 4, 5], (1..5).to_a)
  assert_equal([1, 2, 3, 4], (1...5).to_a)
  assert_raise(RangeError) { (1..).to_a }
end
