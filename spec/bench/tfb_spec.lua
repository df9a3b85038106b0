-- bench/tfb: the zever side of the TechEmpower benchmark answers by the TFB rules. The spec
-- serves bench/tfb/app on the data bench/tfb/data.py writes and runs the checker bench/tfb/run.sh
-- runs before measuring (check.py), so neither the app nor the checker can rot unnoticed; and it
-- shows the checker failing on an app that breaks a rule.

local serve = require "spec.support.serve"
local process = require "spec.support.process"

local quote = process.quote

describe("bench/tfb", function()
  local dir, srv

  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. quote(dir)) == 0)
    local r = process.run(process.PYTHON .. " bench/tfb/data.py " .. quote(dir .. "/tfb.db"))
    assert.are.equal(0, r.code, r.stderr)
    local log
    srv, log = serve.start("bench/tfb/app", { "--workers", "1", "--listen", "127.0.0.1:0",
      "--access-log", "off" }, { DB_DSN = "sqlite:" .. dir .. "/tfb.db" })
    assert(srv, log)
  end)

  teardown(function()
    if srv then srv:kill() end
    os.execute("rm -rf " .. quote(dir))
  end)

  it("answers every test type as the TFB rules ask (check.py)", function()
    local r = process.run(process.PYTHON .. " bench/tfb/check.py zever http://127.0.0.1:" .. srv.port .. " "
      .. quote(dir .. "/tfb.db"))
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("every TFB rule checked holds", r.stdout)
  end)

  it("has a checker that rejects a database the answers do not match", function()
    -- The same server checked against another copy of the data: /db rows disagree with it.
    local other = dir .. "/other.db"
    local r = process.run(process.PYTHON .. " -c " .. quote("import sqlite3, sys\n" ..
      "db = sqlite3.connect(sys.argv[1])\n" ..
      "db.execute('CREATE TABLE World (id INTEGER PRIMARY KEY, randomNumber INTEGER)')\n" ..
      "db.execute('CREATE TABLE Fortune (id INTEGER PRIMARY KEY, message TEXT)')\n" ..
      "db.executemany('INSERT INTO World VALUES (?, 0)', ((i,) for i in range(1, 10001)))\n" ..
      "db.commit()\n") .. " " .. quote(other))
    assert.are.equal(0, r.code, r.stderr)
    r = process.run(process.PYTHON .. " bench/tfb/check.py zever http://127.0.0.1:" .. srv.port .. " "
      .. quote(other))
    assert.are.equal(1, r.code)
    assert.matches("/db: row", r.stderr)
    assert.matches("/fortunes: HTML differs", r.stderr)
  end)
end)

-- bench/tfb/procs.py (run.sh's BENCH_TFB_ZEVER_PROCESSES=1): zever as N one-worker processes,
-- each accepting on its own SO_REUSEPORT socket handed over by socket activation.
describe("bench/tfb/procs.py", function()
  local dir, launcher

  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. quote(dir)) == 0)
    local r = process.run(process.PYTHON .. " bench/tfb/data.py " .. quote(dir .. "/tfb.db"))
    assert.are.equal(0, r.code, r.stderr)
  end)

  teardown(function()
    if launcher and process.alive(launcher) then process.terminate(launcher, "KILL", 1) end
    os.execute("rm -rf " .. quote(dir))
  end)

  it("runs two zever serve processes on one port and stops them on SIGTERM", function()
    local port = process.free_port()
    local pidfile, log = dir .. "/pids", dir .. "/log"
    local exe = require("zever.sys").exe()
    local p = io.popen(process.PYTHON .. " bench/tfb/procs.py 2 127.0.0.1 " .. port .. " "
      .. quote(pidfile) .. " -- env DB_DSN=" .. quote("sqlite:" .. dir .. "/tfb.db") .. " "
      .. quote(exe) .. " serve bench/tfb/app --listen 127.0.0.1:" .. port
      .. " --workers 1 --access-log off >" .. quote(log) .. " 2>&1 & echo $!")
    launcher = tonumber(p:read("*l"))
    p:close()
    local function slurp(path)
      local f = io.open(path)
      if not f then return "" end
      local s = f:read("*a")
      f:close()
      return s
    end
    -- Both children say they serve (a second `zever serve` binding the port itself would
    -- refuse it as in use and exit).
    assert(process.wait_for(function()
      local _, n = slurp(log):gsub("serving [^\n]* on http://127%.0%.0%.1:" .. port, "")
      return n == 2
    end, 30), slurp(log))
    local pids = {}
    for pid in slurp(pidfile):gmatch("%d+") do pids[#pids + 1] = tonumber(pid) end
    assert.are.equal(2, #pids)
    for _, pid in ipairs(pids) do
      assert.is_true(process.alive(pid))
      local h = io.popen("readlink /proc/" .. pid .. "/exe")
      assert.are.equal(exe, h:read("*l"))
      h:close()
    end
    for _ = 1, 4 do
      assert.are.equal("200", process.output("curl -s -o /dev/null -w '%{http_code}' "
        .. "http://127.0.0.1:" .. port .. "/plaintext"))
    end
    os.execute("kill -TERM " .. launcher)
    assert(process.wait_for(function()
      return not process.alive(launcher) and not process.alive(pids[1]) and
        not process.alive(pids[2])
    end, 20))
  end)
end)
