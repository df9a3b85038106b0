-- bench/mailer_lua_bench.lua: app.mailer:send with the log mailer, from Lua, through the
-- front-end (zever.mailer), the adapter and the C sink (build + JSON line + one write); the
-- adapter reaches the sink through the FFI for these messages (lua/adapters/mailer/log.lua).
-- Run: bin/zever run bench/mailer_lua_bench.lua [N]
--
-- The log goes to /dev/null so that the number is the mailer's, not the disk's. Time is CPU
-- time of this process (os.clock), median of 5 runs; B/op is Lua heap per send (the returned
-- Message-ID string; C allocates nothing after warm-up).

local mailer = require "zever.mailer"
local mime = require "zever.mime"

local N = tonumber(arg and arg[1]) or 200000

local function measure(name, n, fn)
  fn(math.min(n, 1000))
  local runs, bytes = {}, {}
  for r = 1, 5 do
    collectgarbage("collect")
    collectgarbage("stop")
    local k0 = collectgarbage("count")
    local t0 = os.clock()
    fn(n)
    runs[r] = (os.clock() - t0) / n * 1e9
    bytes[r] = (collectgarbage("count") - k0) * 1024 / n
    collectgarbage("restart")
  end
  table.sort(runs)
  table.sort(bytes)
  print(string.format("Benchmark%-28s %10d %12.1f ns/op %8.0f B/op", name, n, runs[3], bytes[3]))
end

local section = { log_file = "/dev/null", from = "", max_bytes = 10 * 1024 * 1024 }
local m = mailer.new(assert(require("adapters.mailer.log").new(section)), section)

local msg = {
  from = { name = "Zoë Example", email = "zoe@example.com" },
  to = { "alice@example.com", { name = "Bob Smith", email = "bob@example.org" } },
  bcc = "audit@example.com",
  subject = "Your order #12345 has shipped — Grüße",
  text = "Hello Alice,\n\nYour order #12345 has shipped. It should arrive within three business days.\n"
    .. "Track it at https://example.com/track/12345.\n\nThanks for shopping with us!\n-- The Team\n",
  html = "<html><body><p>Hello Alice,</p><p>Your order <b>#12345</b> has shipped.</p></body></html>\n",
}
local small = { from = "app@example.com", to = "alice@example.com", subject = "Hi", text = "hello" }

local sink
measure("LogMailerSend", N, function(n)
  for _ = 1, n do sink = m:send(msg) end
end)
measure("LogMailerSendSmall", N, function(n)
  for _ = 1, n do sink = m:send(small) end
end)
measure("MimeBuildLua", N, function(n)
  for _ = 1, n do sink = mime.build(msg) end
end)
m:close()
return sink and nil
