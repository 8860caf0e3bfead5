local s = string.rep("x", 1048576) for i = 1, 40 do s = s .. s end
