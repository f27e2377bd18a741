-- Stops the thread after ten responses.
local responses = 0

function response(status, headers, body)
  responses = responses + 1
  if responses == 10 then
    wrk.thread:stop()
  end
end
