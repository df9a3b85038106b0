-- zever under systemd, without systemd running (docs/deploy.md): systemd-socket-activate (from
-- Debian's systemd package) passes a listening socket the way a .socket unit does, and a small
-- datagram listener (spec/support/notify_sink.py) stands in for NOTIFY_SOCKET's reader.

local process = require "spec.support.process"
local files = require "spec.support.files"
local serve = require "spec.support.serve"
local sys = require "zever.sys"
local systemd = require "zever.systemd"

local quote = process.quote
local HOME = sys.home()

local function has(cmd)
  return process.run("command -v " .. cmd).code == 0
end

-- Starts a command in the background with its output in log; returns its pid.
local function spawn(cmdline, log)
  local p = io.popen(cmdline .. " >" .. quote(log) .. " 2>&1 & echo $!")
  local pid = tonumber(p:read("*l"))
  p:close()
  return pid
end

local alive = process.alive

describe("zever serve under systemd #systemd", function()
  local tmp, sink_pid, sock, notes

  setup(function()
    tmp = files.tmpdir({}, "zv-systemd")
    sock, notes = tmp .. "/notify.sock", tmp .. "/notes.log"
    sink_pid = spawn(process.PYTHON .. " " .. quote(HOME .. "/spec/support/notify_sink.py") .. " " ..
      quote(sock) .. " " .. quote(notes), tmp .. "/sink.out")
    assert(serve.wait_for(function() return files.text(tmp .. "/sink.out"):match("ready") end, 20))
  end)

  teardown(function()
    os.execute("kill " .. sink_pid .. " 2>/dev/null")
    files.rm_rf(tmp)
  end)

  local function count(pattern)
    local n = 0
    for line in files.text(notes):gmatch("[^\n]+") do
      if line:match(pattern) then n = n + 1 end
    end
    return n
  end

  it("accepts on the socket it was passed and says READY, RELOADING, WATCHDOG and STOPPING",
    function()
      if not has("systemd-socket-activate") then
        pending("systemd-socket-activate is missing (apt-get install systemd)")
        return
      end
      local port = serve.free_port()
      local log = tmp .. "/serve.log"
      -- No --listen: the app would bind 127.0.0.1:8080; it answers on port only through fd 3.
      local pid = spawn("systemd-socket-activate -l 127.0.0.1:" .. port ..
        " -E NOTIFY_SOCKET=" .. quote(sock) .. " -E WATCHDOG_USEC=200000 " ..
        quote(sys.exe()) .. " serve " .. quote(HOME .. "/examples/hello") .. " --workers 2", log)
      finally(function() if alive(pid) then os.execute("kill -9 " .. pid) end end)
      -- It listens once it says so (a connection before that is refused); then it starts the
      -- service on the first connection, as systemd does.
      assert.truthy(serve.wait_for(function()
        return files.text(log):find("Listening on 127.0.0.1:" .. port, 1, true)
      end, 20), files.text(log))
      local r = process.run("curl -s -S --max-time 20 http://127.0.0.1:" .. port .. "/hello")
      assert.equal("hello world", r.stdout, files.text(log))
      assert.truthy(serve.wait_for(function() return count("^READY=1|") >= 1 end, 20), files.text(notes))
      assert.matches("MAINPID=" .. pid, files.text(notes))
      assert.truthy(serve.wait_for(function() return count("^WATCHDOG=1$") >= 2 end, 20))
      os.execute("kill -HUP " .. pid)
      assert.truthy(serve.wait_for(function() return count("^READY=1|") >= 2 end, 20), files.text(notes))
      local text = files.text(notes)
      assert.truthy(text:find("RELOADING=1|MONOTONIC_USEC=", 1, true))
      assert.truthy(text:find("RELOADING=1", 1, true) < select(2, text:find("READY=1.-READY=1")))
      r = process.run("curl -s -S --max-time 20 http://127.0.0.1:" .. port .. "/users/7")
      assert.equal('{"id":7}', r.stdout)
      os.execute("kill -TERM " .. pid)
      assert.truthy(serve.wait_for(function() return not alive(pid) end, 20))
      assert.equal(1, count("^STOPPING=1$"))
    end)
end)

describe("zever.systemd", function()
  local function env(t) return function(k) return t[k] end end

  it("takes LISTEN_FDS only when LISTEN_PID names this process", function()
    local pid = tostring(require("zever.systemd_core").getpid())
    assert.same({ 3, 4 }, systemd.listen_fds(env({ LISTEN_FDS = "2", LISTEN_PID = pid })))
    assert.is_nil(systemd.listen_fds(env({ LISTEN_FDS = "2", LISTEN_PID = "1" })))
    assert.is_nil(systemd.listen_fds(env({ LISTEN_FDS = "2" })))
    assert.is_nil(systemd.listen_fds(env({ LISTEN_FDS = "0", LISTEN_PID = pid })))
  end)

  it("pings the watchdog at half of WATCHDOG_USEC, for this process only", function()
    local pid = tostring(require("zever.systemd_core").getpid())
    assert.equal(1.5, systemd.watchdog_interval(env({ WATCHDOG_USEC = "3000000" })))
    assert.equal(1.5, systemd.watchdog_interval(env({ WATCHDOG_USEC = "3000000", WATCHDOG_PID = pid })))
    assert.is_nil(systemd.watchdog_interval(env({ WATCHDOG_USEC = "3000000", WATCHDOG_PID = "1" })))
    assert.is_nil(systemd.watchdog_interval(env({})))
  end)

  it("sends nothing without NOTIFY_SOCKET and refuses a relative one", function()
    assert.is_false(systemd.notify("READY=1", env({})))
    local ok, err = systemd.notify("READY=1", env({ NOTIFY_SOCKET = "relative.sock" }))
    assert.is_nil(ok)
    assert.matches("absolute path", err)
  end)

  it("writes journal lines with a <N> priority and no date when stderr is the journal", function()
    local dir = files.tmpdir({ ["log.lua"] = "local log = require('zever.log').new{}\n" ..
      "log:info('hello', { a = 1 }) log:error('bad')\n" }, "zv-journal")
    finally(function() files.rm_rf(dir) end)
    local err = dir .. "/stderr"
    files.write(err, "")
    local id = files.sh("stat -L -c '%d:%i' " .. quote(err))
    process.run("JOURNAL_STREAM=" .. id .. " " .. quote(sys.exe()) .. " run " ..
      quote(dir .. "/log.lua") .. " 2>>" .. quote(err))
    assert.equal("<6>INFO hello a=1\n<3>ERROR bad\n", files.read(err))
    -- The variable without the stream (stderr redirected elsewhere): dated lines as before.
    local other = dir .. "/other"
    process.run("JOURNAL_STREAM=" .. id .. " " .. quote(sys.exe()) .. " run " ..
      quote(dir .. "/log.lua") .. " 2>" .. quote(other))
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT[%d:]+Z INFO hello a=1\n", files.read(other))
  end)
end)
