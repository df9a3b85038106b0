-- bench/http/serve_n.lua: serves examples/hello with zever.server.listen on the main loop until
-- N requests were answered, then prints "requests R" and exits. For callgrind slopes of the
-- user-space instructions per request (load-independent; bench/http/NOTES.md Run 4):
--
--   N=3000 PORT=18080 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.3000 \
--     bin/zever run bench/http/serve_n.lua &      # then, once it listens:
--   wrk -t1 -c8 -d120s http://127.0.0.1:18080/hello   # stopped when the server exits
--   (the same with N=23000; per request: (Ir(23000) - Ir(3000)) / (R(23000) - R(3000)))
--
-- NOJIT=1 turns the JIT off: LuaJIT's trace selection differs from run to run (jit.v shows it),
-- which moves a JIT-on total by ~1,000 Ir/request; with the JIT off the slope is deterministic.
-- READY=path: a file written once the server listens (for scripts that wait on it).
if os.getenv("NOJIT") then jit.off() end
local loop = require "zever.loop"
local server = require "zever.server"

local N = tonumber(os.getenv("N") or "3000")
local PORT = tonumber(os.getenv("PORT") or "18080")
local app = dofile("examples/hello/app.lua")
local srv = assert(server.listen(app, { port = PORT }))
local t
t = loop.every(0.05, function()
  local st = srv:stats()
  if st.requests >= N then
    print("requests " .. st.requests)
    srv:close()
    t:stop()
    loop.stop()
  end
end)
local ready = os.getenv("READY")
if ready then
  local f = assert(io.open(ready, "w"))
  f:write("1")
  f:close()
end
loop.run()
