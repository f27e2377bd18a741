-- A visitor logs in, lists the catalogue with the token it got, reads for
-- a while, then opens an item. Run it against `metron serve`, whose
-- /login hands out a token and whose /private routes want it back.
--
--   metron -t2 -c20 -R100 -d10s -s tests/scripts/flow_login.lua http://127.0.0.1:8080/

local cjson = require("cjson")

function flow(visit)
  local r = http.post("/login", {
    body = cjson.encode({ user = "u" .. visit.id }),
    headers = { ["Content-Type"] = "application/json" },
    name = "login",
  })
  if r.status ~= 200 then return visit:fail("login " .. r.status) end
  local token = cjson.decode(r.body).token
  local auth = { Authorization = "Bearer " .. token }

  local items = http.get("/private/items", { headers = auth, name = "items" })
  if items.status ~= 200 then return visit:fail("items " .. items.status) end
  think.uniform(0.5, 1.5)

  -- The login also set a cookie, which the visit's jar sends back.
  local item = http.get("/private/items/" .. (visit.id % 100), { name = "item" })
  if item.status ~= 200 then return visit:fail("item " .. item.status) end
end
