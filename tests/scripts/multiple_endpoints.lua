-- Spreads requests over every URL on the command line (args[0] is the
-- first, the words after it the rest), as wrk2's multiple-endpoint scripts
-- do: each response moves the thread to the next URL's address, and
-- `Connection: close` makes the next request open a connection there.
local addrs = {}
local paths = {}
local turn = 0

function init(args)
  for i = 0, #args do
    local host, port, path = args[i]:match("^http://([^/:]+):(%d+)(.*)$")
    assert(host, "not an http://host:port URL: " .. args[i])
    addrs[#addrs + 1] = wrk.lookup(host, port)[1]
    paths[#paths + 1] = path ~= "" and path or "/"
  end
  wrk.headers["Connection"] = "close"
end

function request()
  return wrk.format(nil, paths[turn % #paths + 1])
end

function response(status, headers, body)
  turn = turn + 1
  wrk.thread.addr = addrs[turn % #addrs + 1]
end
