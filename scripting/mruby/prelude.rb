# hostd's Ruby prelude: run once per VM before the core is frozen (see
# api.go). Regexp and MatchData are backed by Go's regexp (RE2 syntax,
# linear-time matching: no catastrophic backtracking); Ruby's ^ and $
# always match at line breaks, and /m makes . match a newline, as in
# Ruby. Offsets given to and taken from Go are byte offsets.

class Regexp
  IGNORECASE = 1
  EXTENDED = 2
  MULTILINE = 4

  attr_reader :source, :options

  # Regexp.compile (what a literal calls) is defined in C: it reuses a
  # frozen Regexp of the same source and options.

  def self.escape(str)
    Hostd.__fn("re_escape", str.to_s)
  end

  def self.quote(str)
    escape(str)
  end

  def self.union(*pats)
    pats = pats[0] if pats.size == 1 && pats[0].is_a?(Array)
    new(pats.map { |p| p.is_a?(Regexp) ? p.to_s : escape(p.to_s) }.join("|"))
  end

  def self.last_match(n = nil)
    m = $~
    n.nil? || m.nil? ? m : m[n]
  end

  def initialize(source, opts = nil, _enc = nil)
    if source.is_a?(Regexp)
      @source = source.source
      @options = source.options
    else
      raise TypeError, "no implicit conversion of #{source.class} into String" unless source.is_a?(String)
      # A plain String: a Regexp may be shared by runs (Regexp.compile),
      # so it must not carry a hook's String subclass.
      @source = String.new(source).freeze
      @options = case opts
                 when Integer then opts & 7
                 when String
                   (opts.include?("i") ? IGNORECASE : 0) | (opts.include?("x") ? EXTENDED : 0) |
                     (opts.include?("m") ? MULTILINE : 0)
                 when nil, false then 0
                 else IGNORECASE
                 end
    end
    if @options & EXTENDED != 0
      raise RegexpError, "unknown regex option \"x\": extended mode is not supported (hostd's Regexp uses RE2 syntax)"
    end
    flags = "m"
    flags += "i" if @options & IGNORECASE != 0
    flags += "s" if @options & MULTILINE != 0
    @flags = flags.freeze
    names = Hostd.__fn("re_compile", @source, @flags)
    raise RegexpError, "#{names}: /#{@source}/" if names.is_a?(String)
    names.each { |n| n.freeze }
    @names = names.freeze
    freeze
  end

  def __flags
    @flags
  end

  def __names
    @names
  end

  # __pos converts a character position of str into a byte offset.
  def __pos(str, pos)
    return 0 if pos == 0
    pos += str.size if pos < 0
    return -1 if pos < 0 || pos > str.size
    str[0, pos].bytesize
  end

  # __match (C, hostd_mruby.c's "Regexp fast path") matches from a byte
  # offset and makes the MatchData and sets $~ as __match_slow does.
  def match(str, pos = 0, &blk)
    md = pos == 0 ? __match(str, 0, true) : __match_at(str, pos)
    return yield(md) if md && blk
    md
  end

  def __match_at(str, pos)
    return __match(nil, 0, true) if str.nil?
    str = str.to_s
    b = __pos(str, pos)
    b < 0 ? Hostd.__last_match(nil, str, nil) : __match(str, b, true)
  end

  def match?(str, pos = 0)
    return __match(str, 0, false) if pos == 0
    return false if str.nil?
    str = str.to_s
    b = pos == 0 ? 0 : __pos(str, pos)
    b >= 0 && __match(str, b, false)
  end

  # __match_slow is __match through Hostd.__fn: for the errors it raises
  # and patterns with more than 31 groups.
  def __match_slow(str, b, want_md)
    offs = Hostd.__fn("re_match", @source, @flags, str, b)
    return !offs.nil? unless want_md
    md = offs && MatchData.new(self, str, offs)
    Hostd.__last_match(md, str, offs)
  end

  def =~(str)
    md = match(str)
    md && md.begin(0)
  end

  def ===(str)
    return false unless str.is_a?(String) || str.is_a?(Symbol)
    !match(str).nil?
  end

  def ==(other)
    other.is_a?(Regexp) && other.source == @source && other.options == @options
  end

  def eql?(other)
    self == other
  end

  def hash
    @source.hash ^ @options
  end

  def casefold?
    @options & IGNORECASE != 0
  end

  def names
    @names.compact.uniq
  end

  # to_s embeds in another pattern with this one's options, in RE2's
  # syntax: (?i-s:...).
  def to_s
    on = ""
    off = ""
    (@options & IGNORECASE != 0 ? on : off) << "i"
    (@options & MULTILINE != 0 ? on : off) << "s"
    off = "-" + off unless off.empty?
    "(?#{on}#{off}:#{@source})"
  end

  def inspect
    o = ""
    o << "m" if @options & MULTILINE != 0
    o << "i" if @options & IGNORECASE != 0
    "/#{@source}/#{o}"
  end
end

class MatchData
  attr_reader :regexp, :string

  def initialize(regexp, string, offsets)
    @regexp = regexp
    @string = string.frozen? ? string : string.dup.freeze
    @offs = offsets
  end

  def size
    @offs.size / 2
  end

  def length
    size
  end

  def __group(i)
    b = @offs[2 * i]
    return nil if b.nil? || b < 0
    @string.byteslice(b, @offs[2 * i + 1] - b)
  end

  # __index is the group number of n: an Integer, or a name (the last
  # group of that name that took part).
  def __index(n)
    if n.is_a?(Integer)
      n += size if n < 0
      return n
    end
    name = n.to_s
    idx = nil
    @regexp.__names.each_with_index do |g, j|
      idx = j if g == name && (idx.nil? || @offs[2 * j] >= 0)
    end
    raise IndexError, "undefined group name reference: #{name}" if idx.nil?
    idx
  end

  def [](n, len = nil)
    if len.nil? && n.is_a?(Integer) && n >= 0
      b = @offs[2 * n] # the common case, without the helpers below
      return nil if b.nil? || b < 0
      return @string.byteslice(b, @offs[2 * n + 1] - b)
    end
    return to_a[n, len] unless len.nil?
    i = __index(n)
    return nil if i < 0 || i >= size
    __group(i)
  end

  def to_a
    (0...size).map { |i| __group(i) }
  end

  def captures
    (1...size).map { |i| __group(i) }
  end

  def named_captures
    h = {}
    @regexp.__names.each_with_index { |g, j| h[g] = __group(j) if g && (!h.key?(g) || @offs[2 * j] >= 0) }
    h
  end

  def names
    @regexp.names
  end

  def values_at(*ns)
    ns.map { |n| self[n] }
  end

  def pre_match
    @string.byteslice(0, @offs[0])
  end

  def post_match
    @string.byteslice(@offs[1], @string.bytesize - @offs[1])
  end

  def to_s
    __group(0)
  end

  # byteoffset(n) is [start, end] of group n in bytes; begin, end and
  # offset count characters, as in Ruby.
  def byteoffset(n)
    i = __index(n)
    raise IndexError, "index #{n} out of matches" if i < 0 || i >= size
    b = @offs[2 * i]
    b < 0 ? [nil, nil] : [b, @offs[2 * i + 1]]
  end

  def offset(n)
    b, e = byteoffset(n)
    return [nil, nil] if b.nil?
    [@string.byteslice(0, b).size, @string.byteslice(0, e).size]
  end

  def begin(n)
    offset(n)[0]
  end

  def end(n)
    offset(n)[1]
  end

  def ==(other)
    other.is_a?(MatchData) && other.regexp == @regexp && other.string == @string && other.byteoffset(0) == byteoffset(0)
  end

  def inspect
    s = "#<MatchData #{__group(0).inspect}"
    names = @regexp.__names
    (1...size).each { |i| s << " #{names[i] || i}:#{__group(i).inspect}" }
    s << ">"
  end
end

class String
  alias __hostd_split split
  alias __hostd_sub sub
  alias __hostd_gsub gsub

  def =~(re)
    raise TypeError, "wrong argument type String (expected Regexp)" if re.is_a?(String)
    re =~ self
  end

  def match(re, pos = 0, &block)
    re = Regexp.new(re) if re.is_a?(String)
    re.match(self, pos, &block)
  end

  def match?(re, pos = 0)
    re = Regexp.new(re) if re.is_a?(String)
    re.match?(self, pos)
  end

  def scan(re, &block)
    re = Regexp.new(Regexp.escape(re)) if re.is_a?(String)
    raise TypeError, "wrong argument type #{re.class} (expected Regexp)" unless re.is_a?(Regexp)
    out = []
    md = nil
    last = nil
    Hostd.__fn("re_scan", re.source, re.__flags, self).each do |offs|
      md = MatchData.new(re, self, offs)
      last = offs
      item = md.size > 1 ? md.captures : md[0]
      if block
        Hostd.__last_match(md, self, offs)
        block.call(item)
      else
        out << item
      end
    end
    Hostd.__last_match(md, self, last) unless block
    block ? self : out
  end

  def sub(pat, *rest, &block)
    return __hostd_sub(pat, *rest, &block) unless pat.is_a?(Regexp)
    __hostd_re_sub(pat, 1, rest, block)
  end

  def gsub(pat, *rest, &block)
    return __hostd_gsub(pat, *rest, &block) unless pat.is_a?(Regexp)
    __hostd_re_sub(pat, -1, rest, block)
  end

  def sub!(*args, &block)
    s = sub(*args, &block)
    s == self ? nil : replace(s)
  end

  def gsub!(*args, &block)
    s = gsub(*args, &block)
    s == self ? nil : replace(s)
  end

  # __hostd_re_sub replaces at most n (-1: every) matches of re: with a
  # template String (\0 \& \1..\9 \k<name> \` \' \\), a Hash of match =>
  # replacement, or the block's value ($~ set for it).
  def __hostd_re_sub(re, n, rest, block)
    if rest.size == 1 && rest[0].is_a?(String)
      return Hostd.__fn("re_sub", re.source, re.__flags, self, rest[0], n)[0]
    end
    unless (rest.size == 1 && rest[0].is_a?(Hash)) || (rest.empty? && block)
      raise ArgumentError, "wrong arguments: want (pattern, replacement String or Hash) or (pattern) { block }"
    end
    hash = rest[0]
    all = Hostd.__fn("re_scan", re.source, re.__flags, self)
    all = all[0, 1] if n == 1
    out = ""
    last = 0
    all.each do |offs|
      md = MatchData.new(re, self, offs)
      out << byteslice(last, offs[0] - last)
      if hash
        out << hash[md[0]].to_s
      else
        Hostd.__last_match(md, self, offs)
        out << block.call(md[0]).to_s
      end
      last = offs[1]
    end
    out << byteslice(last, bytesize - last)
  end

  def split(pat = nil, limit = 0)
    return __hostd_split(pat, limit) unless pat.is_a?(Regexp)
    Hostd.__fn("re_split", pat.source, pat.__flags, self, limit)
  end
end

module Hostd
  # URL escaping: escape_uri for a query component or path segment (a
  # space is %20), escape_form for application/x-www-form-urlencoded (a
  # space is +). The unescape functions give nil for an invalid escape.
  def self.escape_uri(str)
    __fn("escape_uri", str.to_s)
  end

  def self.escape_form(str)
    __fn("escape_form", str.to_s)
  end

  def self.unescape_uri(str)
    __fn("unescape_uri", str.to_s)
  end

  def self.unescape_form(str)
    __fn("unescape_form", str.to_s)
  end

  def self.encode_args(hash)
    __fn("encode_args", hash)
  end

  def self.decode_args(str)
    __fn("decode_args", str.to_s)
  end

  # Digests and HMACs: hex text by name (md5 and sha1 for older systems),
  # raw bytes from digest and hmac.
  def self.md5(str)
    __fn("digest_hex", "md5", str)
  end

  def self.sha1(str)
    __fn("digest_hex", "sha1", str)
  end

  def self.sha512(str)
    __fn("digest_hex", "sha512", str)
  end

  def self.hmac_md5(key, str)
    __fn("hmac_hex", "md5", key, str)
  end

  def self.hmac_sha1(key, str)
    __fn("hmac_hex", "sha1", key, str)
  end

  def self.hmac_sha512(key, str)
    __fn("hmac_hex", "sha512", key, str)
  end

  def self.digest(alg, str)
    __fn("digest", alg.to_s, str)
  end

  def self.hmac(alg, key, str)
    __fn("hmac", alg.to_s, key, str)
  end

  def self.hex_encode(str)
    __fn("hex_encode", str)
  end

  def self.hex_decode(str)
    __fn("hex_decode", str)
  end

  def self.base64url_encode(str)
    __fn("base64url_encode", str)
  end

  def self.base64url_decode(str)
    base64_decode(str)
  end

  # random_bytes(n) from the system's secure source; random_token(n = 32)
  # is n random bytes as base64url text.
  def self.random_bytes(n)
    __fn("random_bytes", n)
  end

  def self.random_token(n = 32)
    __fn("random_token", n)
  end

  def self.constant_time_equal?(a, b)
    __fn("constant_time_equal", a, b)
  end

  def self.constant_time_equal(a, b)
    __fn("constant_time_equal", a, b)
  end

  # http_time(t = now) formats Unix seconds (or a Time) as an HTTP date;
  # parse_http_time gives Unix seconds, or nil.
  def self.http_time(t = nil)
    t = t.to_i if !t.nil? && !t.is_a?(Numeric)
    __fn("http_time", t)
  end

  def self.parse_http_time(str)
    __fn("parse_http_time", str.to_s)
  end

  # JSON: nil is null in Ruby, and [] an empty array; these exist so that
  # code written for both languages reads the same.
  def self.json_null
    nil
  end

  def self.json_empty_array
    []
  end

  # Cookies is r.cookies: [] looks one name up in the request's Cookie
  # headers (no Hash is built for it); each, to_h, keys and the rest of
  # Enumerable see them all (the first of a repeated name).
  class Cookies
    include Enumerable

    def [](name)
      Hostd.__fn("cookie", name.to_s)
    end

    def key?(name)
      !self[name].nil?
    end

    def include?(name)
      key?(name)
    end

    def fetch(name, *default)
      v = self[name]
      return v unless v.nil?
      return yield(name) if block_given?
      return default[0] unless default.empty?
      raise KeyError, "key not found: #{name.inspect}"
    end

    def to_h
      Hostd.__fn("cookies")
    end

    def each(&block)
      return to_enum(:each) unless block
      to_h.each { |k, v| block.call(k, v) }
      self
    end

    def keys
      to_h.keys
    end

    def size
      to_h.size
    end

    def length
      size
    end

    def empty?
      size == 0
    end

    def inspect
      to_h.inspect
    end
  end

  class Request
    def cookies
      Cookies.new
    end

    # set_cookie(name:, value:, path:, domain:, max_age:, expires:, secure:,
    # http_only:, same_site:), or the same as a Hash.
    def set_cookie(opts = nil, **kw)
      Hostd.__fn("set_cookie", opts.nil? ? kw : opts.merge(kw))
    end

    def post_args
      Hostd.__fn("post_args")
    end

    def json_body
      Hostd.__fn("json_body")
    end
  end

  class HeadersIn
    include Enumerable

    # each yields each header's name (lower case, sorted) and its value,
    # or an Array for a header sent several times.
    def each(&block)
      return to_enum(:each) unless block
      Hostd.__fn("headers", true).each { |k, v| block.call(k, v) }
      self
    end

    def to_h
      h = {}
      Hostd.__fn("headers", true).each { |k, v| h[k] = v }
      h
    end

    def keys
      Hostd.__fn("headers", true).map { |k, _| k }
    end
  end

  class HeadersOut
    include Enumerable

    def each(&block)
      return to_enum(:each) unless block
      Hostd.__fn("headers", false).each { |k, v| block.call(k, v) }
      self
    end

    def to_h
      h = {}
      Hostd.__fn("headers", false).each { |k, v| h[k] = v }
      h
    end

    def keys
      Hostd.__fn("headers", false).map { |k, _| k }
    end
  end
end
