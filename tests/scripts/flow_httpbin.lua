-- A visit to httpbin (https://httpbin.org's application, run locally):
-- it sets a cookie and reads it back, takes a token from one answer and
-- authenticates with it, then waits on a slow route. Every step checks
-- what came back, so a visit that got another visit's cookie or token
-- fails by name.
--
--   gunicorn --bind 127.0.0.1:8000 --worker-class gthread --threads 16 httpbin:app
--   metron -t1 -c8 -R20 -d5s -s tests/scripts/flow_httpbin.lua http://127.0.0.1:8000/

local cjson = require("cjson")

function flow(visit)
  local mine = "v" .. visit.id
  local r = http.get("/cookies/set?visit=" .. mine, { name = "set-cookie" })
  if r.status ~= 302 then return visit:fail("set-cookie " .. r.status) end

  r = http.get("/cookies", { name = "cookies" })
  if r.status ~= 200 then return visit:fail("cookies " .. r.status) end
  if cjson.decode(r.body).cookies.visit ~= mine then return visit:fail("not my cookie") end

  r = http.get("/uuid", { name = "token" })
  if r.status ~= 200 then return visit:fail("token " .. r.status) end
  local auth = { Authorization = "Bearer " .. cjson.decode(r.body).uuid }

  r = http.get("/bearer", { headers = auth, name = "bearer" })
  if r.status ~= 200 then return visit:fail("bearer " .. r.status) end
  think(0.05)

  r = http.get("/delay/0.1", { headers = auth, name = "delay" })
  if r.status ~= 200 then return visit:fail("delay " .. r.status) end
end
