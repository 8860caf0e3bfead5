local t = {} for i = 1, 1e9 do t[#t + 1] = {i, tostring(i)} end
