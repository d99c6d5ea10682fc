-- wrk script: POST a ~4 KiB crash log, different in every request, so that
-- every request is a new report the server has to store durably.
-- Environment: FL_LOG (template), FL_KEY, FL_PATH, FL_RUN, FL_IDS.
-- Crash ids are random version-4 UUIDs, as libfaultline draws them (and as
-- random as the SHA-256 ids of MojoCrash logs): the server's index of
-- crash ids then takes each insert on a page of its own, as in production.
-- FL_IDS=seq gives the sequential ids the bench used before (per thread, a
-- counter), which land on one page after another and flatter the server.
-- Template fields:
--   @ID@    a fresh crash id          @TIME@  crash time
--   @UP@    uptime                    @INST@  one of 1,000 installation ids
--   @B1@ @B2@          module base addresses (ASLR)
--   @B1+N@ @B2+N@      an address N bytes into that module
-- init() renders VARIANTS logs with their own time, uptime, installation
-- and base addresses (everything but the crash id), so that request() costs
-- the load generator no more than a fixed body would: two concatenations.
local VARIANTS = 1024
local counter = 0
local threads = 0
local heads, tails, key, path, prefix, seq_ids
local random, format = math.random, string.format

function setup(thread)
  thread:set("tnum", threads)
  threads = threads + 1
end

local function render(parts, v)
  local out = {}
  for i = 1, #parts do
    local p = parts[i]
    if type(p) == "string" then
      out[i] = p
    else
      local x = v[p[1]]
      out[i] = type(x) == "number" and string.format("%d", x + p[2]) or x
    end
  end
  return table.concat(out)
end

function init(args)
  local f = assert(io.open(os.getenv("FL_LOG"), "rb"))
  local t = f:read("*a")
  f:close()
  local run = tonumber(os.getenv("FL_RUN") or "0")
  math.randomseed(run * 1000 + tnum)
  -- parts: literal text and {field, offset}, in order.
  local parts, pos = {}, 1
  while true do
    local i, j, name = t:find("@([%w+]+)@", pos)
    if not i then break end
    parts[#parts + 1] = t:sub(pos, i - 1)
    local base, off = name:match("^(B%d)%+(%d+)$")
    parts[#parts + 1] = base and { base, tonumber(off) } or { name, 0 }
    pos = j + 1
  end
  parts[#parts + 1] = t:sub(pos)
  heads, tails = {}, {}
  for k = 1, VARIANTS do
    local s = render(parts, {
      ID = "\0",
      TIME = 1700000000 + math.random(0, 86400 * 30),
      UP = math.random(1, 1000000),
      INST = string.format("%016x", math.random(1, 1000)),
      B1 = 93000000000000 + math.random(0, 2 ^ 28) * 4096,
      B2 = 139000000000000 + math.random(0, 2 ^ 28) * 4096,
    })
    local i = s:find("\0", 1, true)
    heads[k], tails[k] = s:sub(1, i - 1), s:sub(i + 1)
  end
  key = os.getenv("FL_KEY") or ""
  path = os.getenv("FL_PATH") or "/api/v1/crashes"
  -- Distinct per thread and per run.
  prefix = string.format("%08x", (run * 256 + tnum) % 4294967296)
  seq_ids = os.getenv("FL_IDS") == "seq"
end

function request()
  counter = counter + 1
  local k = counter % VARIANTS + 1
  local id
  if seq_ids then
    id = format("%s-%08x-0000-0000-000000000000", prefix, counter)
  else
    id = format("%08x-%04x-4%03x-%04x-%08x%04x", random(0, 0xffffffff), random(0, 0xffff),
                random(0, 0xfff), random(0x8000, 0xbfff), random(0, 0xffffffff), random(0, 0xffff))
  end
  local body = heads[k] .. id .. tails[k]
  return wrk.format("POST", path,
    {["X-Faultline-Key"] = key, ["Content-Type"] = "text/plain"}, body)
end
