-- A header value with a line break: refused before anything is sent.
wrk.headers["X-Note"] = "first line\r\nsecond line"
