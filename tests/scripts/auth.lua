-- Adds a bearer token, taken from the script arguments, to every request.
-- No request() hook: the request is built once.
function init(args)
  wrk.headers["Authorization"] = "Bearer " .. args[1]
end
