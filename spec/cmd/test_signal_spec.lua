-- zever test killed by a signal (a CI timeout's SIGTERM, ^C's SIGINT) closes no Lua state, so
-- no __gc sentinel stops the servers its specs started: the watchdog each server gets
-- (spec/support/watchdog.py, process.watchdog) stops them and removes their folders. An inner
-- `zever test` runs a spec that starts PostgreSQL (the shared server), redis-server and the SMTP
-- sink, writes their PIDs once their watchdogs watch, and waits to be killed.

local process = require "spec.support.process"
local files = require "spec.support.files"
local sys = require "zever.sys"

local quote = process.quote

-- The inner spec: starts the three servers, waits for each watchdog's mark, writes the PIDs
-- (and folders) to OUT as one line, then waits (up to 120 s) for the signal.
local INNER = [[
local pg_server = require "spec.support.pg_server"
local redis_server = require "spec.support.redis_server"
local smtp_server = require "spec.support.smtp_server"
local process = require "spec.support.process"
describe("servers", function()
  it("wait for the signal", function()
    local pg = pg_server.shared()
    local redis = assert(redis_server.start())
    local smtp = assert(smtp_server.start())
    for _, s in ipairs({ pg, redis, smtp }) do
      assert(process.wait_for(function()
        return io.open(s.dir .. "/watchdog." .. s.pid) ~= nil
      end, 30), "no watchdog for " .. s.pid)
    end
    local f = assert(io.open(%q .. ".tmp", "w"))
    f:write(("%%d %%s %%d %%s %%d %%s\n"):format(pg.pid, pg.dir, redis.pid, redis.dir, smtp.pid, smtp.dir))
    f:close()
    os.rename(%q .. ".tmp", %q)
    process.wait_for(function() return false end, 120)
  end)
end)
]]

-- Whether path exists.
local function exists(path)
  local r = os.execute("test -e " .. quote(path))
  return r == 0 or r == true
end

for _, signal in ipairs({ "TERM", "INT" }) do
  describe("zever test killed by SIG" .. signal .. " #pg #redis #smtp", function()
    local dir, runner, servers

    before_each(function()
      dir = files.tmpdir(nil, "zever-sigtest")
      servers = nil
      local out = dir .. "/pids"
      files.write(dir .. "/inner_spec.lua", INNER:format(out, out, out))
      -- From the repository (spec.support resolves there), in the background: its PID. A
      -- background job of a shell starts with SIGINT ignored; env gives it the default back,
      -- as a terminal's foreground run has it.
      runner = tonumber(process.output("cd " .. quote(sys.home()) ..
        " && exec env --default-signal=INT " .. quote(sys.exe()) .. " test " ..
        quote(dir .. "/inner_spec.lua") .. " >" .. quote(dir .. "/log") .. " 2>&1 & echo $!"))
      assert(process.wait_for(function() return files.slurp(out) ~= nil end, 90),
        "the inner run wrote no PIDs: " .. files.text(dir .. "/log"))
      local line = files.read(out)
      servers = {}
      for pid, folder in line:gmatch("(%d+) (%S+)") do
        servers[#servers + 1] = { pid = tonumber(pid), dir = folder }
      end
    end)

    after_each(function()
      if runner then process.terminate(runner, "KILL", 0) end
      -- Whatever the watchdogs left (a failure of this spec), stopped by PID.
      for _, s in ipairs(servers or {}) do
        if process.alive(s.pid) then process.terminate(s.pid, "KILL", 0) end
        files.rm_rf(s.dir)
      end
      files.rm_rf(dir)
    end)

    it("stops PostgreSQL, redis-server and the SMTP sink and removes their folders", function()
      assert.are.equal(3, #servers)
      for _, s in ipairs(servers) do
        assert.is_true(process.alive(s.pid), "server " .. s.pid .. " is not running before the kill")
      end
      assert(os.execute("kill -" .. signal .. " " .. runner) == 0)
      assert.is_true(process.wait_for(function() return not process.alive(runner) end, 30),
        "zever test did not die of SIG" .. signal)
      runner = nil
      for _, s in ipairs(servers) do
        assert.is_true(process.wait_for(function() return not process.alive(s.pid) end, 30),
          "server " .. s.pid .. " outlived the killed run")
        assert.is_true(process.wait_for(function() return not exists(s.dir) end, 30),
          s.dir .. " is left")
      end
    end)
  end)
end
