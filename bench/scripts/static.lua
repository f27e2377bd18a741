-- Only sets request fields: the request is built once, no Lua per request.
wrk.method = "GET"
wrk.headers["X-Bench"] = "static"
