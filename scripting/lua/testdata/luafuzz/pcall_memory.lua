local s = "x"
while true do pcall(function() s = s .. s end) end
