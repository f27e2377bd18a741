function response(status, headers, body)
  local missing = nil
  return missing.field
end
