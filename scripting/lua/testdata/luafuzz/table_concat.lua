local parts = {}
for i = 1, 100 do parts[#parts + 1] = string.format("<li>%d</li>", i) end
r:write(table.concat(parts, "\n"))
