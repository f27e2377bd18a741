-- Sends three requests at once, pipelined on one connection.
function init(args)
  local batch = {
    wrk.format(nil, "/first"),
    wrk.format(nil, "/second"),
    wrk.format("HEAD", "/third"),
  }
  pipelined = table.concat(batch)
end

function request()
  return pipelined
end
