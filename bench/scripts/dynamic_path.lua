-- A new path for every request: one Lua call per request.
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, "/item/" .. n)
end
