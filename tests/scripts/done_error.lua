function done(summary, latency, requests)
  error("broken report")
end
