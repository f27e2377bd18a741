-- A custom report after the run.
function done(summary, latency, requests)
  io.write("custom report\n")
  io.write(string.format("requests %d\n", summary.requests))
  io.write(string.format("errors %d\n", summary.errors.status + summary.errors.read))
  for _, p in ipairs({ 50, 90, 99, 99.9 }) do
    io.write(string.format("p%g %d\n", p, latency:percentile(p)))
  end
  io.write(string.format("min<=max %s\n", tostring(latency.min <= latency.max)))
  io.write(string.format("samples %d\n", #requests > 0 and 1 or 0))
end
