-- bench/stream_lua_bench.lua: streamed response throughput (zever.stream) through a real
-- `zever serve` (1 worker) and curl reading to /dev/null on loopback.
--
--   bin/zever run bench/stream_lua_bench.lua [filter]      (make bench BENCH=Stream)
--
-- Rows: 256 MiB in 64 KiB writes (bulk: MiB/s) and 16 MiB in 1 KiB writes (writes/s, the
-- per-write cost: one chunk header + one send each), beside one res:send of 64 MiB (the
-- unstreamed ceiling). Each row is the median of 5 runs; the time is curl's time_total.

local serve = require "spec.support.serve"
local fs = require "spec.support.files"

local filter = (arg and arg[1]) or os.getenv("BENCH") or ""

local dir = fs.tmpdir({}, "zever-stream-bench")
fs.write(dir .. "/app.lua", [[
local zever = require "zever"
local app = zever.app()
local big = string.rep("x", 64 * 1024)
local small = string.rep("y", 1024)
local whole = string.rep("z", 64 * 1024 * 1024)
app:get("/bulk", function(_, res)
  for _ = 1, 4096 do if not res:write(big) then return end end
end)
app:get("/small", function(_, res)
  for _ = 1, 16384 do if not res:write(small) then return end end
end)
app:get("/whole", function() return whole end)
return app
]])

local srv = serve.start(dir, { "--workers", "1", "--access-log", "off" })

local function curl(path)
  local p = io.popen(("curl -s -o /dev/null -w '%%{size_download} %%{time_total}' " ..
    "http://127.0.0.1:%d%s"):format(srv.port, path))
  local out = p:read("*a")
  p:close()
  local size, t = out:match("^(%d+) ([%d.]+)")
  return tonumber(size), tonumber(t)
end

local function median(xs)
  table.sort(xs)
  return xs[math.ceil(#xs / 2)]
end

local rows = {
  { "StreamWrite64KiB", "/bulk", 4096 },
  { "StreamWrite1KiB", "/small", 16384 },
  { "ResponseSend64MiB", "/whole", 1 },
}
for _, row in ipairs(rows) do
  local name, path, writes = row[1], row[2], row[3]
  if filter == "" or name:lower():find(filter:lower(), 1, true) then
    curl(path) -- warm up
    local ts, size = {}, 0
    for i = 1, 5 do size, ts[i] = curl(path) end
    local t = median(ts)
    print(("%-22s %8.1f MiB/s %12.0f writes/s  (%d bytes in %.3f s, median of 5)"):format(
      name, size / t / 1048576, writes / t, size, t))
  end
end
srv:kill()
fs.rm_rf(dir)
