# From mruby 3.1.0 (Debian source package mruby_3.1.0-3), mrbgems/mruby-enumerator/test/enumerator.rb: a few assert blocks.
assert 'Enumerator.class' do
  assert_equal Class, Enumerator.class
end
assert 'Enumerator#with_object arguments' do
  to_three = Enumerator.new do |y|
    3.times do |x|
      y << x
    end
  end

  a = []
  to_three_with_string = to_three.with_object("foo")
  to_three_with_string.each do |x,string|
    a << "#{string}:#{x}"
  end
  assert_equal ["foo:0","foo:1","foo:2"], a
end
assert 'Enumerator#rewind clear feed' do
  o = Object.new
  def o.each(ary)
    ary << yield
    ary << yield
    ary << yield
  end
  ary = []
  e = o.to_enum(:each, ary)
  e.next
  e.feed 1
  e.next
  e.feed 2
  e.rewind
  e.next
  e.next
  assert_equal([1,nil], ary)
end
assert 'Kernel#to_enum' do
  e = nil
  assert_equal Enumerator, [].to_enum.class
  assert_nothing_raised { e = [].to_enum(:_not_implemented_) }
  assert_raise(NoMethodError) { e.first }
end
assert 'Hash#each' do
  a = {a:1,b:2}
  b = a.each
  c = []
  b.each do |k,v|
    c << [k,v]
  end
  assert_equal [[:a,1], [:b,2]], c.sort
end
assert 'Enumerable#zip' do
  assert_equal [[1, 10], [2, 11], [3, 12]], [1,2,3].zip(10..)

  ret = []
  assert_equal nil, [1,2,3].zip(10..) { |i| ret << i }
  assert_equal [[1, 10], [2, 11], [3, 12]], ret

  assert_raise(TypeError) { [1].zip(1) }
end
