-- The flow API: a visit is a coroutine running the script's flow(visit);
-- http.* and think() pause it by yielding to the engine, which resumes it
-- with the answer or when the think is over. Everything here is plain Lua
-- around coroutine.yield: a Rust function cannot yield.
--
-- What a visit yields, and the engine reads:
--   "step", bytes, name   a request (wrk.format's bytes) and its step name
--   "think", seconds      a rest that holds no connection
--   "fail", reason        the visit ends, failed
-- The engine resumes a step with (response, cookies): the response table
-- the flow reads, and every Set-Cookie value of the answer, for the jar.
local random = ...
local yield, running, create = coroutine.yield, coroutine.running, coroutine.create
local type, tostring, error, pairs, select = type, tostring, error, pairs, select
local setmetatable, rawget = setmetatable, rawget
local floor, log, huge, min = math.floor, math.log, math.huge, math.min
local now = os.time
local find, sub, lower, gsub = string.find, string.sub, string.lower, string.gsub

-- The longest step name or failure reason: each is a row's label.
local MAX_NAME = 100

-- The visits running now, by coroutine: only they may call http.* or think.
local visits = setmetatable({}, { __mode = "k" })

local function visit_of(what)
  local visit = visits[running() or false]
  if not visit then
    error(what .. " works only inside flow(visit): it waits for an answer or a rest, which only a visit can", 3)
  end
  return visit
end

local function trim(s)
  return (gsub(s, "^%s+", ""):gsub("%s+$", ""))
end

-- The characters of UTF-8 text (continuation bytes are not counted).
local function length(s)
  local _, n = gsub(s, "[^\128-\191]", "")
  return n
end

-- `s` cut to its first `n` characters, never inside one.
local function clip(s, n)
  if #s <= n then return s end
  local at, count = 1, 0
  while at <= #s do
    if count == n then return sub(s, 1, at - 1) end
    at = at + 1
    while at <= #s and find(sub(s, at, at), "^[\128-\191]") do at = at + 1 end
    count = count + 1
  end
  return s
end

-- A value as an error shows it: a string quoted, so that "0.1" is not
-- taken for the number.
local function shown(x)
  if type(x) == "string" then return string.format("%q (a string)", x) end
  return tostring(x)
end

-- Days since 1970-01-01 of a civil date (proleptic Gregorian).
local function days(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local MONTHS = { jan = 1, feb = 2, mar = 3, apr = 4, may = 5, jun = 6,
                 jul = 7, aug = 8, sep = 9, oct = 10, nov = 11, dec = 12 }

-- An Expires date (RFC 1123, or RFC 850's dashes) in seconds since the
-- epoch; nil when it cannot be read, and then the cookie is kept.
local function expires_at(attrs)
  local date = attrs:match(";%s*expires%s*=%s*([^;]*)")
  if not date then return nil end
  local d, mon, y, hh, mm, ss = date:match("(%d+)[%s%-]+(%a%a%a)%a*[%s%-]+(%d+)%s+(%d+):(%d+):(%d+)")
  local m = mon and MONTHS[lower(mon)]
  if not m then return nil end
  y = tonumber(y)
  if y < 100 then y = y + (y < 70 and 2000 or 1900) end
  return days(y, m, tonumber(d)) * 86400 + tonumber(hh) * 3600 + tonumber(mm) * 60 + tonumber(ss)
end

-- A cookie's default path: the request path's directory (RFC 6265 5.1.4).
local function default_path(path)
  local q = find(path, "?", 1, true)
  if q then path = sub(path, 1, q - 1) end
  local dir = path:match("^(/.*)/[^/]*$")
  return (dir and dir ~= "") and dir or "/"
end

-- Whether a request to `path` carries a cookie of `cookie_path`.
local function path_matches(path, cookie_path)
  local q = find(path, "?", 1, true)
  if q then path = sub(path, 1, q - 1) end
  if path == cookie_path then return true end
  if sub(path, 1, #cookie_path) ~= cookie_path then return false end
  return sub(cookie_path, -1) == "/" or sub(path, #cookie_path + 1, #cookie_path + 1) == "/"
end

-- The jar keeps each cookie's value and path (one visit talks to one
-- host, so Domain is not read); Max-Age=0 or less, or an Expires in the
-- past, deletes it.
local function absorb(jar, cookies, path)
  for i = 1, #cookies do
    local c = cookies[i]
    local semi = find(c, ";", 1, true)
    local pair = semi and sub(c, 1, semi - 1) or c
    local eq = find(pair, "=", 1, true)
    if eq then
      local name = trim(sub(pair, 1, eq - 1))
      local value = trim(sub(pair, eq + 1))
      local attrs = semi and lower(sub(c, semi)) or ""
      local age = attrs:match(";%s*max%-age%s*=%s*(-?%d+)")
      local expires = not age and expires_at(attrs)
      local at = semi and sub(c, semi):match(";%s*[Pp][Aa][Tt][Hh]%s*=%s*([^;]*)")
      at = at and trim(at)
      if not at or sub(at, 1, 1) ~= "/" then at = default_path(path) end
      if (age and tonumber(age) <= 0) or (expires and expires <= now()) then
        jar[name] = nil
      elseif name ~= "" then
        jar[name] = { value = value, path = at }
      end
    end
  end
end

-- The Cookie field of a request to `path`: what `base` (-H) carries,
-- then the jar's cookies whose path it is under.
local function cookie_header(jar, path, base)
  local parts = {}
  for name, c in pairs(jar) do
    if path_matches(path, c.path) then
      parts[#parts + 1] = name .. "=" .. c.value
    end
  end
  table.sort(parts)
  if base then table.insert(parts, 1, base) end
  if #parts == 0 then return nil end
  return table.concat(parts, "; ")
end

local function has_field(headers, wanted)
  for name in pairs(headers) do
    if type(name) == "string" and lower(name) == wanted then return true end
  end
  return false
end

-- Answers' header names come in lower case (HTTP/2 and HTTP/3 send them
-- so); this finds them by any case.
local any_case = {
  __index = function(t, k)
    if type(k) == "string" then return rawget(t, lower(k)) end
  end,
}

local function step(method, path, opts)
  local what = "http." .. lower(method)
  local visit = visit_of(what)
  if type(path) ~= "string" then
    error(what .. "(path, opts): the path must be a string, got " .. type(path), 3)
  end
  if find(path, "[%s%c]") then
    error(what .. ": the path holds a space or a control character; percent-encode it (%20)", 3)
  end
  if sub(path, 1, 1) ~= "/" then
    error(what .. "(\"" .. path .. "\"): a step's path starts with '/'; every step goes to the URL's host (set headers.Host to name another virtual host)", 3)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error(what .. "(path, opts): opts must be a table ({ headers = ..., body = ..., name = ... }), got " .. type(opts), 3)
  end
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "headers" and k ~= "body" and k ~= "name" then
      error(what .. ": opts." .. tostring(k) .. " is not an option of a step; it takes headers, body and name", 3)
    end
  end
  local extra, body, name = opts.headers, opts.body, opts.name
  if extra ~= nil and type(extra) ~= "table" then
    error(what .. ": opts.headers must be a table of name = value, got " .. type(extra), 3)
  end
  if body ~= nil and type(body) ~= "string" then
    error(what .. ": opts.body must be a string, got " .. type(body) .. " (cjson.encode makes one of a table)", 3)
  end
  if name ~= nil and type(name) ~= "string" then
    error(what .. ": opts.name must be a string, got " .. type(name), 3)
  end
  if name ~= nil and (#name == 0 or length(name) > MAX_NAME or find(name, "%c")) then
    error(what .. ": opts.name must be 1 to " .. MAX_NAME .. " characters without control characters (a report's row label), got " .. length(name) .. " characters", 3)
  end
  local headers = {}
  for k, v in pairs(wrk.headers) do headers[k] = v end
  if extra then
    for k, v in pairs(extra) do
      if type(k) ~= "string" or (type(v) ~= "string" and type(v) ~= "number") then
        error(what .. ": opts.headers must map names to strings, got " .. type(k) .. " = " .. type(v), 3)
      end
      v = tostring(v)
      if not find(k, "^[%w!#$%%&'*+.^_`|~-]+$") or find(v, "[\r\n%z]") then
        error(what .. ": the header " .. k .. " is not a valid field (a name of letters, digits and -, a value without line breaks)", 3)
      end
      local framing = lower(k)
      if framing == "content-length" or framing == "transfer-encoding" then
        error(what .. ": opts.headers." .. k .. " frames the body, which metron does from opts.body; drop it", 3)
      end
      -- A field of -H is replaced whatever the case of its name.
      for old in pairs(headers) do
        if lower(old) == lower(k) then headers[old] = nil end
      end
      headers[k] = v
    end
  end
  -- The jar's cookies go after those of -H; a step's own Cookie field
  -- replaces both.
  if not (extra and has_field(extra, "cookie")) then
    local base
    for k, v in pairs(headers) do
      if lower(k) == "cookie" then base, headers[k] = v, nil end
    end
    headers["Cookie"] = cookie_header(visit.jar, path, base)
  end
  local bytes = wrk.format(method, path, headers, body)
  if name == nil then
    -- A long path's name is cut (a row label): name such steps.
    local q = find(path, "?", 1, true)
    name = clip(method .. " " .. (q and sub(path, 1, q - 1) or path), MAX_NAME)
  end
  local response, cookies = yield("step", bytes, name)
  if cookies then absorb(visit.jar, cookies, path) end
  setmetatable(response.headers, any_case)
  return response
end

http = {
  get = function(path, opts) return step("GET", path, opts) end,
  post = function(path, opts) return step("POST", path, opts) end,
  put = function(path, opts) return step("PUT", path, opts) end,
  delete = function(path, opts) return step("DELETE", path, opts) end,
  head = function(path, opts) return step("HEAD", path, opts) end,
  patch = function(path, opts) return step("PATCH", path, opts) end,
  request = function(method, path, opts)
    if type(method) ~= "string" or not find(method, "^[%u]+$") then
      error("http.request(method, path, opts): the method must be upper-case letters, such as \"OPTIONS\", got " .. (type(method) == "string" and string.format("%q", method) or tostring(method)), 2)
    end
    return step(method, path, opts)
  end,
}

local function rest(what, seconds)
  visit_of(what)
  if type(seconds) ~= "number" or seconds ~= seconds or seconds < 0 or seconds == huge then
    error(what .. ": the time must be a finite number of seconds, 0 or more, got " .. shown(seconds), 3)
  end
  if seconds > 1e9 then
    error(what .. ": " .. tostring(seconds) .. " s is longer than any run; rest at most 1e9 s", 3)
  end
  yield("think", seconds)
end

local function number(what, x, name)
  if type(x) ~= "number" or x ~= x or x < 0 or x == huge then
    error(what .. ": " .. name .. " must be a finite number of seconds, 0 or more, got " .. shown(x), 3)
  end
end

think = setmetatable({
  uniform = function(a, b)
    number("think.uniform(a, b)", a, "a")
    number("think.uniform(a, b)", b, "b")
    if b < a then
      error("think.uniform(a, b): b must not be less than a, got " .. a .. " and " .. b, 2)
    end
    -- Tail calls, here and below: an error of rest() names the script's
    -- line, two levels up.
    return rest("think.uniform", a + (b - a) * random())
  end,
  exp = function(mean)
    number("think.exp(mean)", mean, "the mean")
    -- A draw past any run (a long tail of a long mean) rests the longest.
    return rest("think.exp", min(-mean * log(1 - random()), 1e9))
  end,
}, { __call = function(_, seconds) return rest("think", seconds) end })

local Visit = {}
Visit.__index = Visit

function Visit:set(key, value)
  if key == nil then error("visit:set(key, value): the key is nil", 2) end
  rawget(self, "data")[key] = value
end

function Visit:get(key)
  return rawget(self, "data")[key]
end

function Visit:fail(reason)
  visit_of("visit:fail")
  if reason == nil then reason = "failed" end
  if type(reason) ~= "string" and type(reason) ~= "number" then
    error("visit:fail(reason): the reason must be a string, got " .. type(reason), 2)
  end
  -- Reasons are often made of what a server said: kept to one short line.
  reason = clip(gsub(tostring(reason), "%c", " "), MAX_NAME)
  yield("fail", reason)
  -- Never resumed: the engine drops a failed visit.
end

-- A new visit: its coroutine, to resume with its visit table.
local function spawn(flow, id)
  local co = create(flow)
  local visit = setmetatable({ id = id, data = {}, jar = {} }, Visit)
  visits[co] = visit
  return co, visit
end

return { spawn = spawn }
