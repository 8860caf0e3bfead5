local s = ("ab"):rep(1000):gsub("(a)(b)", "%2%1%0")
r:write(#s)
