-- Waits 10 to 20 ms (at random) before every request.
function delay()
  return math.random(10, 20)
end
