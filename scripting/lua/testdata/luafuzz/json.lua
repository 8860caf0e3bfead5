local v = hostd.json_decode('{"a":[1,2,{"b":null}],"c":"d"}')
r:write(hostd.json_encode({v.a, v.c, nested = {deep = {true, false}}}))
