for k, v in string.gmatch("a=1, b=2, c=3", "(%w+)=(%w+)") do r:write(k, v) end
r:write(string.find("hello world", "o w"), ("x"):rep(5):match("^(x+)$"))
