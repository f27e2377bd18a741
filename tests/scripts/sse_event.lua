-- Each event's data reaches event(), in order: the third one of the
-- first response ends the run with an error that quotes it.
seen = 0
function event(data)
  seen = seen + 1
  if seen == 3 then
    error("third event: " .. data)
  end
end
