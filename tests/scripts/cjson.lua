-- A script written for wrk2 with lua-cjson 2.1: a second instance with its
-- own settings, the safe module, and the error texts scripts match on.
local cjson = require "cjson"
local cjson2 = cjson.new()
local cjson_safe = require "cjson.safe"

function init(args)
  -- Settings of one instance leave the others alone.
  cjson2.encode_number_precision(4)
  paths = cjson.decode(args[1]).paths
  n = 0
end

function request()
  n = n + 1
  local body = cjson2.encode({ n, n / 3, "a/b" })
  local headers = { ["Content-Type"] = "application/json" }
  return wrk.format("POST", paths[(n - 1) % #paths + 1], headers, body)
end

function done(summary, latency, requests)
  -- done() runs in the main state, where init() did not run.
  cjson2.encode_number_precision(4)
  cjson2.encode_sparse_array(true)
  cjson2.decode_max_depth(2)
  local _, sparse_error = pcall(cjson.encode, { [1] = 1, [50] = 2 })
  local _, safe_error = cjson_safe.decode("{oops")
  local _, depth_error = cjson_safe.new().decode(string.rep("[", 1001))
  local report = {
    requests = summary.requests,
    module = { cjson._NAME, cjson._VERSION, cjson_safe._NAME },
    precision = { cjson.encode_number_precision(), cjson2.encode_number_precision() },
    sparse = { cjson.encode_sparse_array() },
    converted = cjson.decode(cjson2.encode({ [1] = "a", [50] = "b" }))["50"],
    padded = cjson.encode({ [3] = "c" }),
    sparse_error = sparse_error,
    safe_error = safe_error,
    depth_error = depth_error,
    nested = cjson_safe.decode(cjson2.encode({ { 1 } }))[1][1],
    too_deep = cjson_safe.encode(cjson2.decode("[[1]]")) and
      select(2, pcall(cjson2.decode, "[[[1]]]")),
    null = cjson.decode("[null]")[1] == cjson.null,
    nan = cjson_safe.encode(0 / 0) == nil,
  }
  io.write("cjson: ", cjson.encode(report), "\n")
end
