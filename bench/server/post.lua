-- wrk script: POST a ~4 KiB crash log with a fresh CRASH_ID per request, so
-- that every request is a new report the server has to store durably.
-- Environment: FL_LOG (template file, "CRASH_ID @ID@" line), FL_KEY, FL_PATH.
local counter = 0
local threads = 0
local head, tail, key, path, prefix

function setup(thread)
  thread:set("tnum", threads)
  threads = threads + 1
end

function init(args)
  local f = assert(io.open(os.getenv("FL_LOG"), "rb"))
  local t = f:read("*a")
  f:close()
  local i, j = t:find("@ID@", 1, true)
  head, tail = t:sub(1, i - 1), t:sub(j + 1)
  key = os.getenv("FL_KEY") or ""
  path = os.getenv("FL_PATH") or "/api/v1/crashes"
  -- Distinct per thread and per run.
  prefix = string.format("%08x", (tonumber(os.getenv("FL_RUN") or "0") * 256 + tnum) % 4294967296)
end

function request()
  counter = counter + 1
  local body = head .. string.format("%s-%08x-0000-0000-000000000000", prefix, counter) .. tail
  return wrk.format("POST", path,
    {["X-Faultline-Key"] = key, ["Content-Type"] = "text/plain"}, body)
end
