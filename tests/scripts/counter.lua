-- A new path for every request: /item/0, /item/1, ...
local counter = 0

function request()
  local path = "/item/" .. counter
  counter = counter + 1
  return wrk.format(nil, path)
end
