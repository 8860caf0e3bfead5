# From mruby 3.1.0 (Debian source package mruby_3.1.0-3), mrbgems/mruby-pack/test/pack.rb: a few assert blocks.
assert('pack("M")') do
  assert_pack "M", "123=\n", ["123"]
  assert_pack "M", "=3D\n", ["=\n"]
  assert_pack "M", "=E3=81=82=\n", ["あ"]

  assert_equal ["123"], "123=\n".unpack("M")
  assert_equal ["=\n"], "=3D\n".unpack("M")
  assert_equal ["あ"], "=E3=81=82=\n".unpack("M")
end
assert('pack("H")') do
  assert_pack "H*", "01", ["3031"]
  assert_pack "H*", "\020", ["10"]
end
assert('pack("C")') do
  assert_pack "C*", "\x00\x01\x7F\x80\xFF", [0, 1, 127, 128, 255]
end
assert('pack("a")') do
  assert_equal "a", ["abc"].pack("a")
  assert_equal "abc", ["abc"].pack("a*")
  assert_equal "abc\0", ["abc"].pack("a4")

  assert_equal ["abc\0"], "abc\0".unpack("a4")
  assert_equal ["abc "], "abc ".unpack("a4")
end
assert('pack("A")') do
  assert_equal "a", ["abc"].pack("A")
  assert_equal "abc", ["abc"].pack("A*")
  assert_equal "abc ", ["abc"].pack("A4")

  assert_equal ["abc"], "abc\0".unpack("A4")
  assert_equal ["abc"], "abc ".unpack("A4")
end
assert('issue #1') do
  assert_equal "\000\001\000\002", [1, 2].pack("nn")
end
