function request()
  return wrk.format(
end
