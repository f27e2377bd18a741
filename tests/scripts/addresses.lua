-- Prints where each thread connects, what the host resolves to, and
-- whether each address accepts a connection.
function setup(thread)
  io.write("thread addr " .. thread.addr .. "\n")
end

for _, addr in ipairs(wrk.lookup(wrk.host, tostring(wrk.port))) do
  io.write("lookup " .. addr .. " connect " .. tostring(wrk.connect(addr)) .. "\n")
end
