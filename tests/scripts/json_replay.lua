-- Replays the requests of a JSON Lines file with a bearer token, called
-- the way scripts of the JSON-replay wrk forks are, with no `--`:
--   metron -t2 -c10 -d30s -L -s json_replay.lua URL requests.jsonl TOKEN
-- Each line is an object with "method", "path", and optionally "headers"
-- and "body".
local cjson = require "cjson"
local cjson2 = cjson.new()
local cjson_safe = require "cjson.safe"

local requests = {}
local next_request = 0

function init(args)
  local file = assert(io.open(args[1], "r"))
  for line in file:lines() do
    if line ~= "" then
      local r, err = cjson_safe.decode(line)
      assert(r, err)
      requests[#requests + 1] = r
    end
  end
  file:close()
  assert(#requests > 0, "no requests in " .. args[1])
  assert(cjson2.decode(cjson.encode(requests[1])).path == requests[1].path)
  -- wrk.format() takes a request's own headers instead of wrk.headers,
  -- so the token goes into each request's table.
  for _, r in ipairs(requests) do
    r.headers = r.headers or {}
    r.headers["Authorization"] = "Bearer " .. args[2]
  end
end

function request()
  next_request = next_request % #requests + 1
  local r = requests[next_request]
  return wrk.format(r.method, r.path, r.headers, r.body)
end
