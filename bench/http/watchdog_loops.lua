-- bench/http/watchdog_loops.lua LOOP: which CPU-bound handlers the watchdog's count hook
-- interrupts (handler_timeout 0.3 s). Serves one app on the main loop, asks GET /spin with curl
-- (4 s bound), and prints the status curl got, its time, and the server's watchdog_interrupts.
-- A loop the hook cannot reach keeps the process busy: run it under `timeout`.
--
--   for w in empty arith lua_call tostring concat os_clock table_alloc pcall_loop nojit; do
--     timeout 8 bin/zever run bench/http/watchdog_loops.lua $w 2>/dev/null || echo "$w: not interrupted"
--   done
local server = require "zever.server"
local loop = require "zever.loop"
local zever = require "zever"
local which = arg[1]
local app = zever.app()
-- The loops compute values nobody reads: that is the point.
-- luacheck: push no unused
local loops = {
  empty = function() while true do end end,
  arith = function() local x = 0 while true do x = x + 1 end end,
  lua_call = function()
    local function f(a) return a + 1 end
    local x = 0
    while true do x = f(x) end
  end,
  tostring = function() local x = 0 while true do x = x + #tostring(x) end end,
  concat = function()
    local t, i = {}, 0
    while true do i = i + 1; t[i % 100 + 1] = "k" .. i end
  end,
  os_clock = function() local x = 0 while true do x = x + os.clock() end end,
  table_alloc = function() local x while true do x = { 1, 2, 3 } end end,
  pcall_loop = function() while true do pcall(function() while true do end end) end end,
  nojit = function() jit.off(true, true) while true do end end,
}
-- luacheck: pop
app:get("/spin", function() loops[which]() end)
app:get("/hello", function() return "hello" end)
local srv = assert(server.listen(app, { host = "127.0.0.1", port = 0, access_log = false,
  limits = { handler_timeout = 0.3 } }))
local port = srv:port()
local out = "/tmp/zever-watchdog-loops.code"
os.execute(("(curl -s -m 4 -o /dev/null -w '%%{http_code} %%{time_total}' " ..
  "http://127.0.0.1:%d/spin > %s) &"):format(port, out))
loop.after(5, function() loop.stop() end)
loop.run()
local f = io.open(out)
local code = f and f:read("*a") or ""
if f then f:close() end
io.stdout:write(which, ": status ", code, ", interrupts ", srv:stats().watchdog_interrupts, "\n")
os.exit(0)
