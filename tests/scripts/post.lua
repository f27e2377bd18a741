-- POSTs a JSON body; Content-Length is added by wrk.format.
wrk.method = "POST"
wrk.body   = '{"name":"metron","n":1}'
wrk.headers["Content-Type"] = "application/json"
