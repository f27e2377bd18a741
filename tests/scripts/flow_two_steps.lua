-- A visit of two steps with a rest between them: each step is timed from
-- when it should have gone, the second from the end of the first plus
-- the rest, so a stall shows in every step it delays.
function flow(visit)
  http.get("/catalogue", { name = "catalogue" })
  think(0.2)
  http.get("/item", { name = "item" })
end
