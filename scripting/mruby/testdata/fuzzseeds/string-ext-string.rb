# From mruby 3.1.0 (Debian source package mruby_3.1.0-3), mrbgems/mruby-string-ext/test/string.rb: a few assert blocks.
assert('String#dump') do
  assert_equal("\"\\x00\"", "\0".dump)
  assert_equal("\"foo\"", "foo".dump)
  assert_equal('"\xe3\x82\x8b"', "る".dump)
  assert_nothing_raised { ("\1" * 100).dump }   # regress #1210
end
assert('String#swapcase!') do
  s = "Hello"
  t = s.clone
  t.swapcase!
  assert_equal s.swapcase, t
end
assert('String#squeeze') do
  assert_equal "yelow mon", "yellow moon".squeeze
  assert_equal " now is the", "  now   is  the".squeeze(" ")
  assert_equal "puters shot balls", "putters shoot balls".squeeze("m-z")
end
assert('String#hex') do
  assert_equal 16, "10".hex
  assert_equal 255, "ff".hex
  assert_equal 16, "0x10".hex
  assert_equal (-16), "-0x10".hex
  assert_equal 0, "xyz".hex
  assert_equal 16, "10z".hex
  assert_equal 16, "1_0".hex
  assert_equal 0, "".hex
end
assert('String#prepend') do
  a = "world"
  assert_equal "hello world", a.prepend("hello ")
  assert_equal "hello world", a
end
assert('String#delete_suffix') do
  assert_equal "he", "hello".delete_suffix("llo")
  assert_equal "hello", "hello".delete_suffix("he")
  assert_equal "he", "hello".delete_suffix!("llo")
  assert_nil "hello".delete_suffix!("he")
end
