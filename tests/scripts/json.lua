-- Replays paths from a JSON array given as the script argument.
local cjson = require("cjson")

function init(args)
  paths = cjson.decode(args[1])
  i = 0
end

function request()
  i = i + 1
  return wrk.format(nil, paths[(i - 1) % #paths + 1])
end

function done(summary, latency, requests)
  io.write(cjson.encode({ requests = summary.requests, ok = true }) .. "\n")
end
