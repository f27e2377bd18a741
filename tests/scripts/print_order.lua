-- Prints from setup(), init() and done(), partly without a newline, so a
-- test can check that it all comes out in the order it was written, among
-- metron's own output, whatever standard output is.
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
  print("setup", threads)
end

function init(args)
  print("init", id)
  if id == 2 then
    -- No newline: metron's next line follows on the same line, as it
    -- would under wrk.
    io.write("(no newline)")
  end
end

function done(summary, latency, requests)
  print("done", summary.requests)
  io.stdout:write("no newline at the end")
end
