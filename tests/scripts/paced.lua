-- Records when each request() is called; done() prints the mean gap.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  calls = {}
end

function request()
  calls[#calls + 1] = wrk.time_us()
  return wrk.request()
end

function response(status, headers, body)
  last_status = status
  last_length = headers["Content-Length"]
  last_body = body
end

function done(summary, latency, requests)
  local calls = threads[1]:get("calls")
  local gap = (calls[#calls] - calls[1]) / (#calls - 1)
  io.write(string.format("calls %d mean gap %d us\n", #calls, gap))
  io.write(string.format("last response %d %s %q\n", threads[1]:get("last_status"),
    threads[1]:get("last_length"), threads[1]:get("last_body")))
end
