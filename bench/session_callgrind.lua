-- session_callgrind.lua: fixed-count loops of a request's session work through
-- zever.middleware.session over the memory adapter, for instruction counts that load cannot
-- move (bench/session_lua_bench.lua times the same ops). The count of an op is the slope
-- between two runs, so start-up and trace compilation cancel out:
--
--   for n in 20000 60000; do
--     valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=cg.$n \
--       bin/zever run bench/session_callgrind.lua rw $n
--   done   # Ir per op = (Ir(60000) - Ir(20000)) / 40000 (callgrind_annotate: PROGRAM TOTALS)
--
-- Cases: rw (one read + one write per request), read (one read, no save), none (the request and
-- response objects and the middleware, the session untouched: what rw and read cost on top of
-- it is the session's), rw2 (rw with the requests alternating between two stores on the same
-- table, as between two workers: each load finds the other's record and decodes it, the worst
-- case of zever.session's recent records); n defaults to 20000.

local which, n = arg[1], tonumber(arg[2] or "20000")
local session = require "zever.session"
local middleware = require "zever.middleware.session"
local request = require "zever.request"
local response = require "zever.response"

local store = session.new{ name = "callgrind", idle_timeout = 3600, absolute_timeout = 86400 }
local s = store:create()
s.data.user_id, s.data.count, s.data.name = 42, 0, "ann"
local token = assert(store:save(s))
local header = "theme=dark; zever_session=" .. token .. "; lang=en"
local source = { header = function(_, name) if name == "cookie" then return header end end }
local mw = middleware{ store = store, touch_interval = 1e9 }
local mws = { mw, mw }
if which == "rw2" then
  local other = session.new{ name = "callgrind", idle_timeout = 3600, absolute_timeout = 86400 }
  mws[2] = middleware{ store = other, touch_interval = 1e9 }
end

local req
local function rw() local x = req.session; x.count = x.count + 1 end
local function read() return req.session.user_id end
local function none() end
local op = (which == "read" and read) or (which == "none" and none) or rw
for i = 1, n do
  req = request.new("GET", "/", nil, {}, source)
  mws[i % 2 + 1](req, response.new(), op)
end
