-- done() reports per thread from string globals each thread set, reaching
-- the threads with unpack() as wrk users' report scripts do.
local threads = {}

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  label = "worker-" .. wrk.thread:get("id")
  answered = 0
end

function response(status, headers, body)
  answered = answered + 1
end

function done(summary, latency, requests)
  local first, second = unpack(threads, 1, 2)
  for _, t in ipairs({ first, second }) do
    io.write(string.format("%s answered %d\n", t:get("label"), t:get("answered")))
  end
end
