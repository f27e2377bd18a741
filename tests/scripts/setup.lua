-- setup() passes an id to each thread; done() reads each thread's counters.
local counter = 1
local threads = {}

function setup(thread)
  thread:set("id", counter)
  thread:set("config", { name = "t" .. counter, list = { 10, 20, 30 } })
  table.insert(threads, thread)
  counter = counter + 1
end

function init(args)
  requests  = 0
  responses = 0
end

function request()
  requests = requests + 1
  return wrk.request()
end

function response(status, headers, body)
  responses = responses + 1
end

function done(summary, latency, requests)
  for _, thread in ipairs(threads) do
    local id = thread:get("id")
    local config = thread:get("config")
    io.write(string.format("thread %d (%s, %d) made %d requests and got %d responses\n",
      id, config.name, config.list[3], thread:get("requests"), thread:get("responses")))
  end
end
